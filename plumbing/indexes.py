"""Dropping an index Django made that another index already serves, without locking the table.

Django makes two indexes nobody asks for: one on every foreign key (`db_index=True` by default),
even where a composite index or unique constraint leading with that column serves the same
lookups, and on PostgreSQL a `_like` index (`varchar_pattern_ops`) beside every unique or indexed
CharField, for `LIKE 'prefix%'` queries. Each is one more btree written by every INSERT. The
migrations that drop them (docs/performance.md, "Indexes") find them by what they are, not by
the hashed names Django gave them, and on PostgreSQL drop them with `DROP INDEX CONCURRENTLY`,
which takes no lock that stops writes (hence `atomic = False` on those migrations). Reversed, they
are made again, `CONCURRENTLY` too.
"""

PATTERN_OPS = ("varchar_pattern_ops", "text_pattern_ops")


def single_column_indexes(connection, table: str, column: str, *, pattern_ops: bool = False) -> list[str]:
    """The names of the plain (non-unique, non-partial) one-column indexes on `table(column)`: with
    `pattern_ops`, only PostgreSQL's `varchar/text_pattern_ops` ones (none elsewhere), without it
    only the others."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                """
                SELECT i.relname FROM pg_index x
                JOIN pg_class i ON i.oid = x.indexrelid
                JOIN pg_class t ON t.oid = x.indrelid
                JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
                JOIN pg_opclass o ON o.oid = x.indclass[0]
                WHERE t.relname = %s AND pg_catalog.pg_table_is_visible(t.oid) AND a.attname = %s
                  AND x.indnatts = 1 AND NOT x.indisunique AND NOT x.indisprimary
                  AND x.indpred IS NULL AND x.indexprs IS NULL AND (o.opcname = ANY(%s)) = %s
                ORDER BY i.relname
                """,
                [table, column, list(PATTERN_OPS), pattern_ops],
            )
            return [row[0] for row in cursor.fetchall()]
        if pattern_ops:
            return []
        constraints = connection.introspection.get_constraints(cursor, table)
    return sorted(
        name
        for name, constraint in constraints.items()
        if constraint["index"]
        and not constraint["unique"]
        and not constraint["primary_key"]
        and constraint["columns"] == [column]
    )


def index_drop(schema_editor, table: str, column: str, *, pattern_ops: bool = False) -> list[str]:
    """Drop the indexes `single_column_indexes` finds; returns their names."""
    connection = schema_editor.connection
    names = single_column_indexes(connection, table, column, pattern_ops=pattern_ops)
    concurrently = " CONCURRENTLY" if connection.vendor == "postgresql" else ""
    for name in names:
        schema_editor.execute(f"DROP INDEX{concurrently} IF EXISTS {schema_editor.quote_name(name)}")
    return names


def index_create(schema_editor, table: str, column: str, *, pattern_ops: bool = False) -> None:
    """Make such an index again (a migration reversed), unless one is there."""
    connection = schema_editor.connection
    if pattern_ops and connection.vendor != "postgresql":
        return
    if single_column_indexes(connection, table, column, pattern_ops=pattern_ops):
        return
    quote = schema_editor.quote_name
    name = f"{table}_{column}_{'like' if pattern_ops else 'idx'}"
    concurrently = " CONCURRENTLY" if connection.vendor == "postgresql" else ""
    opclass = " varchar_pattern_ops" if pattern_ops else ""
    schema_editor.execute(
        f"CREATE INDEX{concurrently} IF NOT EXISTS {quote(name)} ON {quote(table)} ({quote(column)}{opclass})"
    )
