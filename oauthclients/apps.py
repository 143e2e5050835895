from django.apps import AppConfig
from django.db.models.signals import post_migrate, pre_migrate


def _status_triggers_uninstall(sender, using="default", **kwargs):
    # Before every migrate: SQLite cannot rebuild a table another table's trigger names.
    from django.db import connections

    from oauthclients.models import AccessToken
    from oauthclients.statuslist import status_triggers_uninstall

    if AccessToken._meta.db_table in connections[using].introspection.table_names():
        status_triggers_uninstall(using=using)


def _status_triggers_install(sender, using="default", **kwargs):
    # After every migrate, so that a table a migration rebuilt (SQLite) gets its triggers back.
    from oauthclients.statuslist import status_triggers_install

    status_triggers_install(using=using)


class OAuthClientsConfig(AppConfig):
    name = "oauthclients"
    verbose_name = "OAuth clients"

    def ready(self):
        from oauthclients import signals  # noqa: F401 - connects the receivers

        pre_migrate.connect(_status_triggers_uninstall, sender=self, dispatch_uid="oauthclients.status_triggers_off")
        post_migrate.connect(_status_triggers_install, sender=self, dispatch_uid="oauthclients.status_triggers")
