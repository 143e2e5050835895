"""allauth's AccountMiddleware, kept off the machine-to-machine paths.

allauth's middleware sets `request.allauth`, enters a context variable holding the request (its
adapters read it), turns its exceptions into responses, and redirects a 404 at `/accounts/` to the
login page. None of that concerns the token, revocation, introspection, userinfo, status-list and
/v2 API endpoints, nor the metadata documents, whose cost per request the bench measures
(docs/performance.md): there, the request goes straight on.
"""

from allauth.account.adapter import get_adapter
from allauth.account.internal.flows.reauthentication import suspend_request
from allauth.account.middleware import AccountMiddleware as _AllauthAccountMiddleware
from django.conf import settings
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext

from accounts.selectors import (
    login_is_recent,
    provider_refusing_direct_login,
    session_has_second_factor,
    upstream_reauthentication_url,
    user_has_second_factor,
)

# Which paths serve apps and resource servers, never a person with a browser session, and which are
# the admin's: one table for every middleware (plumbing.paths).
from plumbing.paths import EndpointKind, endpoint_kind, is_machine_path


class AccountMiddleware:
    sync_capable = True
    async_capable = False

    def __init__(self, get_response):
        self.get_response = get_response
        self.allauth = _AllauthAccountMiddleware(get_response)

    def __call__(self, request):
        if is_machine_path(request.path_info):
            return self.get_response(request)
        return self.allauth(request)

    def process_exception(self, request, exception):
        if is_machine_path(request.path_info):
            return None
        return self.allauth.process_exception(request, exception)


# --- the staff rule, and recent sign-in before sensitive actions ---------------------------------

# POSTs to these views need a recent sign-in with the user's second factor (accounts.selectors.
# login_is_recent): every admin page that grants a power or takes it back, whichever door it comes
# through (add, change, delete, and the changelist's actions), and the developer pages that issue
# a secret. One list, so that no door of the same action skips it; tests/accounts/
# test_recent_login_doors.py fails for a model registered in the admin that is neither here nor
# read-only there.
RECENT_LOGIN_ADMIN_MODELS = (
    "oauthclients.oauthclient",  # approving, rejecting, adding; secrets and token format (actions)
    "oauthclients.exchangetarget",  # RFC 8693: toward which services a resource server may exchange
    "accounts.identityprovider",  # who may sign people in, and for which domains
    "accounts.assertionpolicy",  # ID-JAG: which clients get tokens with no consent page
    "auth.user",  # staff and superuser status, permissions, someone else's password
    "auth.group",  # the permissions staff get through a group
    "account.emailaddress",  # a password reset goes there; a verified address names a person to ID-JAG
    "mfa.authenticator",  # someone's second factors and passkeys (a passkey of yours on their account)
    "socialaccount.socialaccount",  # which upstream (provider, sub) signs in as whom
)
ADMIN_DOORS = ("add", "change", "delete", "changelist")


def admin_view_names(label: str) -> set[str]:
    """The URL names of every door of `label`'s ("app.model") admin pages."""
    app_label, model_name = label.split(".")
    return {f"admin:{app_label}_{model_name}_{door}" for door in ADMIN_DOORS}


# allauth.mfa's pages that change one's second factors. allauth asks for a re-authentication there
# (its reauthentication_required), except of an account with neither a password nor a factor,
# which it lets through (its TODO: "ideally, you would want to reauthenticate over at the social
# account provider"): RecentLoginMiddleware sends such an account to its provider again
# (prompt=login, max_age=0) unless it signed in there recently.
FACTOR_CHANGE_VIEWS = frozenset(
    {
        "mfa_activate_totp",
        "mfa_deactivate_totp",
        "mfa_generate_recovery_codes",
        "mfa_view_recovery_codes",
        "mfa_download_recovery_codes",
        "mfa_add_webauthn",
        "mfa_remove_webauthn",
        "mfa_edit_webauthn",
    }
)

RECENT_LOGIN_VIEWS = frozenset(
    {
        *(name for label in RECENT_LOGIN_ADMIN_MODELS for name in admin_view_names(label)),
        "admin:oauthclients_oauthclient_approve",
        "admin:oauthclients_oauthclient_reject",
        "admin:auth_user_password_change",  # setting someone else's password
        "developer:client_create",  # a confidential client's first secret
        "developer:client_secret_create",
    }
)


def reauthentication_url(user) -> str:
    """Where `user` proves it is them again: their second factor if they have one, else their
    password, else the identity provider they signed in with (prompt=login)."""
    # An account of an enforced domain proves it is them at its provider (superusers with a second
    # factor excepted: their password way in stays, with the factor).
    provider = provider_refusing_direct_login(user=user)
    if provider is not None:
        return upstream_reauthentication_url(user=user, provider=provider)
    if user_has_second_factor(user=user):
        # The adapter's first method: the authenticator app's code, or a passkey (accounts.adapter).
        return get_adapter().get_reauthentication_methods(user)[0]["url"]
    if user.has_usable_password():
        return reverse("account_reauthenticate")
    return upstream_reauthentication_url(user=user) or reverse("account_login")


def _suspend(request, url: str):
    # allauth keeps the POST and replays it once the user has signed in again. An upstream
    # provider's URL has a query already: `next` joins it rather than starting a second one.
    if "?" in url:
        suspend_request(request, url)
        return HttpResponseRedirect(f"{url}&{urlencode({'next': request.get_full_path()})}")
    return suspend_request(request, url)


class StaffSecondFactorMiddleware:
    """A staff account is let into the admin only from a session signed in with a second factor
    (ours, a passwordless passkey, or one the identity provider reported); without any factor it
    is sent to set one up (SECURITY.md, "Accounts and the login"; OAUTH_STAFF_MFA_REQUIRED)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # Every admin page but the doors in and out (EndpointKind.ADMIN_DOOR): the login is ours
        # (secure_admin_login sends it there).
        if (
            settings.OAUTH_STAFF_MFA_REQUIRED
            and endpoint_kind(request.path_info) == EndpointKind.ADMIN
            and request.user.is_authenticated
            and request.user.is_staff
        ):
            refusal = self._refusal(request)
            if refusal is not None:
                return refusal
        return self.get_response(request)

    def _refusal(self, request):
        if session_has_second_factor(request=request):
            return None
        if user_has_second_factor(user=request.user):
            return _suspend(request, reauthentication_url(request.user))
        messages.warning(
            request, gettext("Administrators need a second factor: set up an authenticator app or a passkey.")
        )
        return redirect(f"{reverse('mfa_index')}?{urlencode({'next': request.get_full_path()})}")


class RecentLoginMiddleware:
    """POSTs to RECENT_LOGIN_VIEWS need a recent sign-in (accounts.selectors.login_is_recent)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        # Someone with a second factor signs in again with it, never with the password alone.
        if (
            match is not None
            and match.view_name == "account_reauthenticate"
            and request.user.is_authenticated
            and user_has_second_factor(user=request.user)
        ):
            query = request.META.get("QUERY_STRING", "")
            return redirect(reauthentication_url(request.user) + (f"?{query}" if query else ""))
        if (
            request.method == "POST"
            and match is not None
            and match.view_name in RECENT_LOGIN_VIEWS
            and request.user.is_authenticated
            and not login_is_recent(request=request)
        ):
            return _suspend(request, reauthentication_url(request.user))
        if (
            match is not None
            and match.view_name in FACTOR_CHANGE_VIEWS
            and request.user.is_authenticated
            and not _allauth_can_reauthenticate(request.user)
            and not login_is_recent(request=request)
        ):
            return _suspend(request, reauthentication_url(request.user))
        return None


def _allauth_can_reauthenticate(user) -> bool:
    """Whether allauth has a way to ask `user` again (a password or a second factor): it asks
    itself then (accounts.adapter.AccountAdapter.is_reauthentication_required)."""
    return user.has_usable_password() or user_has_second_factor(user=user)
