from allauth.account.apps import AccountConfig
from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class AccountsConfig(AppConfig):
    """Our side of the login: django-allauth's adapters, the staff rule, upstream identity providers."""

    name = "accounts"
    verbose_name = "Accounts and identity providers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        from allauth.mfa.webauthn.internal import auth as webauthn_auth

        from accounts import (
            admin_assertions,  # noqa: F401 - the ID-JAG policies' admin page
            admin_audit,  # noqa: F401 - users, groups, addresses, factors and links: admin changes audited
            signals,  # noqa: F401 - second-factor changes on the audit trail
        )
        from accounts.passkeys import passkey_server

        # Every passkey ceremony accepts exactly OAUTH_ISSUER's origin (accounts.passkeys): allauth
        # has no hook for the origin check, only this module function its ceremonies call.
        webauthn_auth.get_server = passkey_server


class AllauthAccountConfig(AccountConfig):
    """allauth's `account` app, requiring our wrapper of its middleware (accounts.middleware) where
    allauth requires its own by name: the wrapper keeps it off the token, introspection and /v2 paths."""

    def ready(self) -> None:
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        from allauth.account import checks  # noqa: F401 - allauth's own system checks

        if "accounts.middleware.AccountMiddleware" not in settings.MIDDLEWARE:
            raise ImproperlyConfigured("accounts.middleware.AccountMiddleware must be in settings.MIDDLEWARE")
