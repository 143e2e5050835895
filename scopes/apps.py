from django.apps import AppConfig


class ScopesConfig(AppConfig):
    name = "scopes"
    verbose_name = "Scopes"
