from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate, pre_migrate
from django.utils.translation import gettext_lazy as _


def _status_triggers_uninstall(sender, using="default", **kwargs):
    # Before every migrate: SQLite cannot rebuild a table another table's trigger names.
    # Imported here: apps.py is imported before the models are ready (Django's app loading).
    from oauthclients.models import AccessToken
    from signing.statuslist import status_triggers_uninstall

    if AccessToken._meta.db_table in connections[using].introspection.table_names():
        status_triggers_uninstall(using=using)


def _status_triggers_install(sender, using="default", **kwargs):
    # After every migrate, so that a table a migration rebuilt (SQLite) gets its triggers back.
    # Imported here: apps.py is imported before the models are ready (Django's app loading).
    from signing.statuslist import status_triggers_install

    status_triggers_install(using=using)


class SigningConfig(AppConfig):
    """Signing keys, JWT access tokens and token status lists (docs/architecture.md)."""

    name = "signing"
    verbose_name = _("Signing keys and token status lists")

    def ready(self):
        # The status list triggers are this app's (signing.statuslist). Django sends the migrate
        # signals once per app with models, before any migration runs and after all have: this
        # app's own are enough, whichever app's migrations rebuilt the tables they sit on.
        pre_migrate.connect(_status_triggers_uninstall, sender=self, dispatch_uid="signing.status_triggers_off")
        post_migrate.connect(_status_triggers_install, sender=self, dispatch_uid="signing.status_triggers")
