"""The table of Django's default cache on PostgreSQL without Redis (plumbing.sharedcache): the
security state django-allauth keeps there (used authenticator-app codes, its limits), shared by
every server process. Made on every database, SQLite too, so that no setting finds it missing;
Django's `createcachetable` layout (its create_table, pinned in tests/test_private_framework_apis.py)."""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

from plumbing.sharedcache import TABLE


def create_table(apps, schema_editor):
    command = CreateCacheTable()
    command.verbosity = 0
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)  # skips an existing table


def drop_table(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0005_self_signups_and_identity_audit")]

    operations = [migrations.RunPython(create_table, drop_table)]
