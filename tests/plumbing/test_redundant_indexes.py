"""The indexes no query reads are gone after `migrate`, and what they duplicated is still there
(plumbing.indexes; oauthclients 0028 and tokens 0003)."""

import importlib

import pytest
from django.db import connection

from plumbing.indexes import index_create, index_drop, single_column_indexes

# (table, column, pattern_ops, the index that serves its lookups instead: its leading column)
DROPPED = [
    ("oauthclients_clientauditevent", "client_id", False),
    ("oauthclients_consent", "user_id", False),
    ("oauthclients_grant", "code", True),
    ("oauthclients_accesstoken", "token_checksum", True),
]


def _indexes_leading_with(table: str, column: str) -> dict:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return {name: c for name, c in constraints.items() if (c["index"] or c["unique"]) and c["columns"][:1] == [column]}


@pytest.mark.django_db
@pytest.mark.parametrize(("table", "column", "pattern_ops"), DROPPED)
def test_the_redundant_index_is_gone_and_another_still_leads_with_its_column(table, column, pattern_ops):
    assert single_column_indexes(connection, table, column, pattern_ops=pattern_ops) == []
    assert _indexes_leading_with(table, column), f"nothing serves {table}.{column} any more"


@pytest.mark.django_db
def test_the_indexes_kept_are_found():
    """Positive control: the finder does see a plain one-column index that is still there."""
    assert single_column_indexes(connection, "oauthclients_accesstoken", "user_id") != []
    assert single_column_indexes(connection, "oauthclients_clientauditevent", "created") != []


@pytest.mark.django_db(transaction=True)  # CONCURRENTLY cannot run inside the test's transaction
@pytest.mark.parametrize(("table", "column", "pattern_ops"), DROPPED)
def test_reversing_makes_the_index_again_and_migrating_drops_it(table, column, pattern_ops):
    with connection.schema_editor(atomic=False) as editor:
        index_create(editor, table, column, pattern_ops=pattern_ops)
    made = single_column_indexes(connection, table, column, pattern_ops=pattern_ops)
    if pattern_ops and connection.vendor != "postgresql":
        assert made == []  # no `_like` index outside PostgreSQL, nothing to make again
        return
    assert len(made) == 1
    with connection.schema_editor(atomic=False) as editor:
        index_create(editor, table, column, pattern_ops=pattern_ops)  # idempotent
        assert single_column_indexes(connection, table, column, pattern_ops=pattern_ops) == made
        assert index_drop(editor, table, column, pattern_ops=pattern_ops) == made
    assert single_column_indexes(connection, table, column, pattern_ops=pattern_ops) == []


@pytest.mark.django_db(transaction=True)
def test_the_migrations_drop_what_django_made_under_its_own_name():
    """The forward functions find Django's hashed names (an index made as Django makes it)."""
    migration = importlib.import_module("oauthclients.migrations.0028_redundant_indexes_dropped")
    with connection.schema_editor(atomic=False) as editor:
        editor.execute(
            "CREATE INDEX oauthclients_clientauditevent_client_id_4cedd986 ON oauthclients_clientauditevent (client_id)"
        )
        assert single_column_indexes(connection, "oauthclients_clientauditevent", "client_id") == [
            "oauthclients_clientauditevent_client_id_4cedd986"
        ]
        migration.drop(None, editor)
    assert single_column_indexes(connection, "oauthclients_clientauditevent", "client_id") == []


@pytest.mark.django_db
def test_a_pattern_ops_index_is_not_taken_for_a_plain_one_nor_the_other_way():
    if connection.vendor != "postgresql":
        assert single_column_indexes(connection, "auth_user", "username", pattern_ops=True) == []
        return
    # Django's own `_like` beside auth_user.username (unique), left in place by this project.
    assert single_column_indexes(connection, "auth_user", "username", pattern_ops=True) != []
    assert single_column_indexes(connection, "auth_user", "username") == []
