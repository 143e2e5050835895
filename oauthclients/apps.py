from django.apps import AppConfig


class OAuthClientsConfig(AppConfig):
    name = "oauthclients"
    verbose_name = "OAuth clients"

    def ready(self):
        from oauthclients import signals  # noqa: F401 - connects the receivers
