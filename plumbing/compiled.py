"""Querysets compiled to SQL once per process, for the hot paths (docs/performance.md).

Building and compiling a queryset costs more CPU than PostgreSQL spends answering an indexed
lookup: on `GET /v2/me` it was a quarter of the request. A CompiledQuery is written as an
ordinary queryset (so the SQL follows the models), compiled on first use per database alias,
and then only executed: the same SQL, through Django's cursor (so the query counter and the
debug log see it), with the caller's values in the parameter slots. Rows come back as the
model instances the queryset would have made, select_related relations included, built with
Model.from_db from the loaded columns only.

Slots are strings, or integers where the build function's parameter is annotated `int`: the
build function is called with sentinel values and each must come out as one parameter of the
compiled SQL, untouched (a lookup that transforms its value, such as iexact, is refused at
compile time rather than silently wrong). `annotations` names values the queryset annotates
(a subquery, say): each is loaded with the row and set on the root instance under its name.

Replaces: `QuerySet.filter(…).select_related(…).first()` built per request (Django's query
construction and SQLCompiler.as_sql) in tokens.selectors.access_token_get_valid and
access_token_get_for_introspection, Validator.authenticate_client's secret lookup and the consent
page's client. Justified by (docs/performance.md, "The hot paths", 1): workbench 2.3 → 1.4 ms of CPU for
`/v2/me`, bench `/v2/me` 0.83 → 1.24 × its floor, introspection 0.73 → 1.15 ×. Kept honest by
tests/tokens/test_compiled_matches_orm.py (each compiled query against the ORM's answer,
field for field, and its SQL against a fresh compile of the current models).
"""

import inspect
from collections.abc import Callable

from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet


def quoted_columns(connection, model: type[Model], *fields: str) -> dict[str, str]:
    """Each field's column, quoted for this connection: for SQL written by hand (claims, consent)."""
    quote = connection.ops.quote_name
    return {field: quote(model._meta.get_field(field).column) for field in fields}


class _Shape:
    """Where one model's columns are in the row, and how it hangs off its parent."""

    def __init__(self, path: str, model: type[Model], attnames: list[str], parent: str | None, field):
        self.path, self.model, self.attnames, self.parent, self.field = path, model, attnames, parent, field
        self.columns: list[int] = []  # row positions, in the model's concrete-field order
        pk = model._meta.pk.attname
        self.pk_position = attnames.index(pk)


class CompiledQuery:
    """`build(*slots) -> QuerySet`, compiled once; `first(*values)` runs it.

    `load` names the columns each model of the queryset loads, by relation path ("" is the
    queryset's model; "user__profile" a select_related path): a tuple of attnames, or None for
    every concrete field. Each model's primary key is always loaded.
    """

    def __init__(
        self,
        build: Callable[..., QuerySet],
        *,
        load: dict[str, tuple[str, ...] | None],
        annotations: tuple[str, ...] = (),
    ):
        self.build = build
        self.load = load
        self.annotations = annotations
        parameters = list(inspect.signature(build).parameters.values())
        self.arity = len(parameters)
        # An int slot's sentinel: a number no caller's value is, far outside any primary key.
        self._sentinels = [
            -(7_300_000_000_000_000_000 + i) if parameter.annotation in (int, "int") else f"\x00compiled-slot-{i}\x00"
            for i, parameter in enumerate(parameters)
        ]
        self._compiled: dict[str, tuple] = {}

    def _shapes(self, model: type[Model]) -> list[_Shape]:
        shapes = []
        for path in sorted(self.load, key=lambda p: (p.count("__") if p else -1, p)):
            current, parent, field = model, None, None
            if path:
                *head, name = path.split("__")
                parent = "__".join(head)
                for part in head:
                    current = current._meta.get_field(part).related_model
                field = current._meta.get_field(name)
                current = field.related_model
            wanted = self.load[path]
            concrete = [f.attname for f in current._meta.concrete_fields]
            if wanted is not None:
                unknown = set(wanted) - set(concrete)
                if unknown:
                    raise FieldDoesNotExist(f"{current.__name__} has no column {sorted(unknown)} ({path or 'root'})")
            names = [name for name in concrete if wanted is None or name in wanted or name == current._meta.pk.attname]
            shapes.append(_Shape(path, current, names, parent, field))
        return shapes

    def _compile(self, alias: str) -> tuple:
        sentinels = self._sentinels
        queryset = self.build(*sentinels)
        shapes = self._shapes(queryset.model)
        lookups = []
        for shape in shapes:
            for name in shape.attnames:
                shape.columns.append(len(lookups))
                lookups.append(f"{shape.path}__{name}" if shape.path else name)
        extra = list(range(len(lookups), len(lookups) + len(self.annotations)))
        lookups.extend(self.annotations)
        compiler = queryset.values_list(*lookups).query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        slots = []
        for param in params:
            slot = (
                sentinels.index(param)
                if isinstance(param, str | int) and not isinstance(param, bool) and param in sentinels
                else None
            )
            slots.append((slot, param))
        found = {slot for slot, _param in slots if slot is not None}
        if found != set(range(self.arity)) or any(str(s) in sql for s in sentinels):
            raise ImproperlyConfigured(f"{self.build!r}: every argument must be one untransformed SQL parameter")
        expressions = [select[0] for select in compiler.select[: compiler.col_count]]
        converters = compiler.get_converters(expressions)
        compiled = (sql, tuple(slots), converters, shapes, extra)
        self._compiled[alias] = compiled
        return compiled

    def rows(self, *values: str | int, using: str = DEFAULT_DB_ALIAS) -> list[tuple]:
        sql, slots, converters, _shapes, _extra = self._compiled.get(using) or self._compile(using)
        params = [values[slot] if slot is not None else param for slot, param in slots]
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if converters:
            rows = [list(row) for row in rows]
            for row in rows:
                for position, (functions, expression) in converters.items():
                    value = row[position]
                    for function in functions:
                        value = function(value, expression, connection)
                    row[position] = value
        return rows

    def first(self, *values: str | int, using: str = DEFAULT_DB_ALIAS) -> Model | None:
        """The first row as a model instance with its select_related relations, or None."""
        rows = self.rows(*values, using=using)
        if not rows:
            return None
        row = rows[0]
        shapes, extra = self._compiled[using][3:]
        instances: dict[str, Model | None] = {}
        for shape in shapes:
            parent = instances.get(shape.parent) if shape.parent is not None else None
            if shape.parent is not None and parent is None:
                instances[shape.path] = None  # below a missing relation
                continue
            if row[shape.columns[shape.pk_position]] is None:
                instance = None  # a LEFT JOIN that found nothing
            else:
                instance = shape.model.from_db(using, shape.attnames, [row[i] for i in shape.columns])
            instances[shape.path] = instance
            if parent is not None:
                shape.field.set_cached_value(parent, instance)
                if instance is not None and shape.field.one_to_one and shape.field.remote_field is not None:
                    shape.field.remote_field.set_cached_value(instance, parent)
        root = instances[""]
        for name, position in zip(self.annotations, extra, strict=True):
            setattr(root, name, row[position])
        return root
