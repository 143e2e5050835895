from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ScopesConfig(AppConfig):
    name = "scopes"
    verbose_name = _("Scopes")

    def ready(self):
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        # Scope declarations are checked at start (manage.py check, runserver, migrate, test).
        from scopes import checks  # noqa: F401
