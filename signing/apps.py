from django.apps import AppConfig
from django.db.models.signals import post_migrate, pre_migrate


def _status_triggers_uninstall(sender, using="default", **kwargs):
    # Before every migrate: SQLite cannot rebuild a table another table's trigger names.
    from django.db import connections

    from oauthclients.models import AccessToken
    from signing.statuslist import status_triggers_uninstall

    if AccessToken._meta.db_table in connections[using].introspection.table_names():
        status_triggers_uninstall(using=using)


def _status_triggers_install(sender, using="default", **kwargs):
    # After every migrate, so that a table a migration rebuilt (SQLite) gets its triggers back.
    from signing.statuslist import status_triggers_install

    status_triggers_install(using=using)


class SigningConfig(AppConfig):
    """Signing keys, JWT access tokens and token status lists (docs/architecture.md)."""

    name = "signing"
    verbose_name = "Signing keys and token status lists"

    def ready(self):
        # The status list triggers are this app's; the tables they sit on are the registry's, whose
        # migrate signals they follow (this app has no models, so no signal of its own).
        from django.apps import apps

        registry = apps.get_app_config("oauthclients")
        pre_migrate.connect(_status_triggers_uninstall, sender=registry, dispatch_uid="signing.status_triggers_off")
        post_migrate.connect(_status_triggers_install, sender=registry, dispatch_uid="signing.status_triggers")
