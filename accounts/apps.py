from allauth.account.apps import AccountConfig
from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    """Our side of the login: django-allauth's adapters, the staff rule, upstream identity providers."""

    name = "accounts"
    verbose_name = _("Accounts and identity providers")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        from allauth.account.signals import user_logged_in
        from allauth.mfa.webauthn.internal import auth as webauthn_auth
        from allauth.usersessions import signals as usersessions_signals

        from accounts import (
            admin_assertions,  # noqa: F401 - the ID-JAG policies' admin page
            admin_audit,  # noqa: F401 - users, groups, addresses, factors and links: admin changes audited
            signals,  # noqa: F401 - second-factor changes on the audit trail, each sign-in's session recorded
        )
        from accounts.passkeys import passkey_server

        # Every passkey ceremony accepts exactly OAUTH_ISSUER's origin (accounts.passkeys): allauth
        # has no hook for the origin check, only this module function its ceremonies call.
        webauthn_auth.get_server = passkey_server
        # A sign-in's session is recorded by accounts.signals in two statements; allauth's receiver
        # (connected in allauth.usersessions' ready, which runs first: INSTALLED_APPS' order) took
        # three per session the account already had (accounts.services.user_session_record).
        if not user_logged_in.disconnect(receiver=usersessions_signals.on_user_logged_in):
            raise ImproperlyConfigured("allauth.usersessions must come before accounts in INSTALLED_APPS")


class AllauthAccountConfig(AccountConfig):
    """allauth's `account` app, requiring our wrapper of its middleware (accounts.middleware) where
    allauth requires its own by name: the wrapper keeps it off the token, introspection and /v2 paths."""

    def ready(self) -> None:
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        from allauth.account import checks  # noqa: F401 - allauth's own system checks

        if "accounts.middleware.AccountMiddleware" not in settings.MIDDLEWARE:
            raise ImproperlyConfigured("accounts.middleware.AccountMiddleware must be in settings.MIDDLEWARE")
