"""Three indexes every Allow or token INSERT wrote and no query reads (plumbing.indexes): the audit
trail's own index on `client_id` (its `(client, -created)` index leads with it, and serves the
trail's pages and a client's deletion alike), and on PostgreSQL the `_like` indexes beside the
unique `oauthclients_grant.code` and `oauthclients_accesstoken.token_checksum` (both looked up
by equality only, through their unique indexes). Dropped CONCURRENTLY: no lock stops writes."""

from django.db import migrations, models

from plumbing.indexes import index_create, index_drop

REDUNDANT = [
    ("oauthclients_clientauditevent", "client_id", False),
    ("oauthclients_grant", "code", True),
    ("oauthclients_accesstoken", "token_checksum", True),
]


def drop(apps, schema_editor):
    for table, column, pattern_ops in REDUNDANT:
        index_drop(schema_editor, table, column, pattern_ops=pattern_ops)


def create(apps, schema_editor):
    for table, column, pattern_ops in REDUNDANT:
        index_create(schema_editor, table, column, pattern_ops=pattern_ops)


class Migration(migrations.Migration):
    atomic = False  # DROP INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("oauthclients", "0027_translatable_admin_field_labels")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="clientauditevent",
                    name="client",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="audit_events",
                        to="oauthclients.oauthclient",
                        verbose_name="client",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(drop, create, atomic=False)],
        ),
    ]
