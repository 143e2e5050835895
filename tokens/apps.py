from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TokensConfig(AppConfig):
    """Tokens' redemption, cleanup, verification and lifecycle signals (docs/architecture.md)."""

    name = "tokens"
    verbose_name = _("Tokens")

    def ready(self):
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        from tokens import signals  # noqa: F401 - connects the receivers
