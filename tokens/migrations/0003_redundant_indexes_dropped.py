"""The consent's own index on `user_id`, which the unique `(user, client)` constraint leading with
it already serves (Connected apps, a user's deletion); written by every first Allow, read by no
query (plumbing.indexes). Dropped CONCURRENTLY on PostgreSQL: no lock stops writes."""

from django.conf import settings
from django.db import migrations, models

from plumbing.indexes import index_create, index_drop


def drop(apps, schema_editor):
    index_drop(schema_editor, "oauthclients_consent", "user_id")


def create(apps, schema_editor):
    index_create(schema_editor, "oauthclients_consent", "user_id")


class Migration(migrations.Migration):
    atomic = False  # DROP INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("tokens", "0002_translatable_admin_names"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="consent",
                    name="user",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="consents",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(drop, create, atomic=False)],
        ),
    ]
