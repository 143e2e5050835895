"""Hand-written SQL in place of the ORM: the one switch, the helpers, and the register of twins.

A few hot paths write their statement by hand on PostgreSQL (docs/performance.md, "The hot
paths"): a code's and a refresh token's redemption (tokens.redemption), the token exchange's lookup
(oauthflows.token.exchange), the consent with its audit row and code (tokens.consents). Each
decides what an ORM function also decides, so that the two can drift; hence:

- one switch, `handwritten_alias(model)`: the database alias when the hand-written path is
  taken (PostgreSQL, not switched off by OAUTH_FAST_REDEMPTION=0), else None and the ORM's path;
- one set of helpers to read rows back as models (`instance`, `json_value`) and to build
  Django's own INSERT for an unsaved instance (`insert_sql`), with `quoted_columns` beside
  them in plumbing.compiled;
- one register, `SQL_TWINS`: each statement (or trigger) that decides a rule, registered with
  `sql_twin(mirrors=...)` by the dotted name of the ORM function it mirrors. tests/test_sql_twins.py
  compares every registered twin with its function on the same rows, one parametrised test, and
  fails on a twin it has no comparison for; the guard tests (tests/test_one_policy_for_clients_and_tokens.py)
  allow a client-status or token-liveness decision outside its function only in a registered twin.

The status list triggers (signing.statuslist) are twins too, but take no switch: the database runs
them on every path, on SQLite and PostgreSQL alike.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import connections, router
from django.db.models.sql import InsertQuery


def handwritten_alias(model) -> str | None:
    """The alias whose hand-written statement replaces the ORM's for `model`'s rows: PostgreSQL
    (SQLite's raw cursor would hand back text for dates), unless OAUTH_FAST_REDEMPTION=0, which
    sends every such path through the ORM (tests compare the two)."""
    if not getattr(settings, "OAUTH_FAST_REDEMPTION", True):
        return None
    alias = router.db_for_write(model)
    return alias if connections[alias].vendor == "postgresql" else None


def instance(model, alias: str, values: dict):
    """A model instance of these column values (by attname), every other column deferred."""
    names = [f.attname for f in model._meta.concrete_fields if f.attname in values]
    return model.from_db(alias, names, [values[name] for name in names])


def json_value(model, name: str, value, alias: str):
    """A JSON column's value as the model field reads it (Django leaves jsonb undecoded)."""
    return model._meta.get_field(name).from_db_value(value, None, connections[alias])


def _compiled_insert(connection, obj) -> tuple[str, tuple, tuple]:
    """Django's compile of the INSERT: (its text, the fields it writes, their values)."""
    meta = obj._meta
    fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field and not f.generated]
    query = InsertQuery(type(obj))
    query.insert_values(fields, [obj])
    compiler = query.get_compiler(connection=connection)
    compiler.returning_fields = [meta.pk]
    ((sql, params),) = compiler.as_sql()
    return sql, tuple(fields), params


# (model, alias) -> (Django's INSERT for it, its fields), kept once a model's statement is made
# of plain %s placeholders: it is then the same text for every row, and only the values change.
_INSERTS: dict[tuple, tuple[str, tuple]] = {}


def insert_sql(connection, obj) -> tuple[str, list]:
    """Django's own INSERT ... RETURNING pk for an unsaved instance (auto_now fields filled).

    Compiled by Django the first time for a model (about 0.2 ms); then its text is reused with
    the values Django's compiler would put in (each field's pre_save, then get_db_prep_save),
    unless a value is an expression or a field writes a placeholder of its own, which only the
    compiler can write (tests/test_private_framework_apis.py compares the two)."""
    key = (type(obj), connection.alias)
    kept = _INSERTS.get(key)
    if kept is not None:
        sql, fields = kept
        values = [field.pre_save(obj, True) for field in fields]
        if not any(hasattr(value, "resolve_expression") for value in values):
            return sql, [
                field.get_db_prep_save(value, connection=connection)
                for field, value in zip(fields, values, strict=True)
            ]
    sql, fields, params = _compiled_insert(connection, obj)
    plain = sql.count("%s") == len(fields) and not any(hasattr(field, "get_placeholder") for field in fields)
    if plain:
        _INSERTS.setdefault(key, (sql, fields))
    return sql, list(params)


def saved(obj, alias: str):
    """An instance whose row a hand-written statement wrote: as Model.save() leaves it."""
    obj._state.adding, obj._state.db = False, alias
    return obj


@dataclass(frozen=True)
class SqlTwin:
    name: str  # the statement's builder, module.function
    mirrors: str  # the ORM function deciding the same, module.function
    decides: str  # what, in words


SQL_TWINS: dict[str, SqlTwin] = {}


def sql_twin(*, mirrors: str, decides: str) -> Callable:
    """Register the decorated statement builder as the twin of the function named by `mirrors`."""

    def register(function):
        name = f"{function.__module__}.{function.__qualname__}"
        SQL_TWINS[name] = SqlTwin(name=name, mirrors=mirrors, decides=decides)
        return function

    return register
