from django.apps import AppConfig


class OAuthClientsConfig(AppConfig):
    name = "oauthclients"
    verbose_name = "OAuth clients"
