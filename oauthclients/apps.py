from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _status_triggers_install(sender, using="default", **kwargs):
    # After every migrate, so that a table a migration rebuilt (SQLite) gets its triggers back.
    from oauthclients.statuslist import status_triggers_install

    status_triggers_install(using=using)


class OAuthClientsConfig(AppConfig):
    name = "oauthclients"
    verbose_name = "OAuth clients"

    def ready(self):
        from oauthclients import signals  # noqa: F401 - connects the receivers

        post_migrate.connect(_status_triggers_install, sender=self, dispatch_uid="oauthclients.status_triggers")
