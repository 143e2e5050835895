"""allauth's AccountMiddleware, kept off the machine-to-machine paths.

allauth's middleware sets `request.allauth`, enters a context variable holding the request (its
adapters read it), turns its exceptions into responses, and redirects a 404 at `/accounts/` to the
login page. None of that concerns the token, revocation, introspection, userinfo, status-list and
/v2 API endpoints, nor the metadata documents, whose cost per request the bench measures
(docs/performance.md): there, the request goes straight on.
"""

from allauth.account.middleware import AccountMiddleware as _AllauthAccountMiddleware

# Every path under these serves apps and resource servers, never a person with a browser session.
MACHINE_PATH_PREFIXES = ("/v2/", "/.well-known/", "/static/")


def is_machine_path(path: str) -> bool:
    return path.startswith(MACHINE_PATH_PREFIXES)


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

# Every /admin/ page but the doors in and out: the login is ours (secure_admin_login sends it there).
_ADMIN_PREFIX = "/admin/"
_ADMIN_OPEN = ("/admin/login/", "/admin/logout/")

# POSTs to these views need a recent sign-in with the user's second factor (accounts.selectors.
# login_is_recent): approving or rejecting a client, creating or rotating a secret, and adding,
# changing or removing an identity provider. One list, so that no door of the same action skips it.
RECENT_LOGIN_VIEWS = frozenset(
    {
        "admin:oauthclients_oauthclient_approve",
        "admin:oauthclients_oauthclient_reject",
        "admin:oauthclients_oauthclient_add",
        "admin:oauthclients_oauthclient_changelist",  # the approve and reject actions
        "developer:client_create",  # a confidential client's first secret
        "developer:client_secret_create",
        "admin:accounts_identityprovider_add",
        "admin:accounts_identityprovider_change",
        "admin:accounts_identityprovider_delete",
        "admin:accounts_identityprovider_changelist",
    }
)


def reauthentication_url(user) -> str:
    """Where `user` proves it is them again: their second factor if they have one, else their
    password, else the identity provider they signed in with (prompt=login)."""
    from django.urls import reverse

    from accounts.selectors import upstream_reauthentication_url, user_has_second_factor

    if user_has_second_factor(user=user):
        return reverse("mfa_reauthenticate")
    if user.has_usable_password():
        return reverse("account_reauthenticate")
    return upstream_reauthentication_url(user=user) or reverse("account_login")


def _suspend(request, url: str):
    from allauth.account.internal.flows.reauthentication import suspend_request

    # allauth keeps the POST and replays it once the user has signed in again.
    return suspend_request(request, url)


class StaffSecondFactorMiddleware:
    """A staff account is let into the admin only from a session signed in with a second factor
    (ours, a passwordless passkey, or one the identity provider reported); without any factor it
    is sent to set one up (SECURITY.md, "Accounts and the login"; OAUTH_STAFF_MFA_REQUIRED)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.conf import settings

        path = request.path_info
        if (
            settings.OAUTH_STAFF_MFA_REQUIRED
            and path.startswith(_ADMIN_PREFIX)
            and not path.startswith(_ADMIN_OPEN)
            and request.user.is_authenticated
            and request.user.is_staff
        ):
            refusal = self._refusal(request)
            if refusal is not None:
                return refusal
        return self.get_response(request)

    def _refusal(self, request):
        from django.contrib import messages
        from django.shortcuts import redirect
        from django.urls import reverse
        from django.utils.http import urlencode

        from accounts.selectors import session_has_second_factor, user_has_second_factor

        if session_has_second_factor(request=request):
            return None
        if user_has_second_factor(user=request.user):
            return _suspend(request, reverse("mfa_reauthenticate"))
        messages.warning(request, "Administrators need a second factor: set up an authenticator app or a passkey.")
        return redirect(f"{reverse('mfa_index')}?{urlencode({'next': request.get_full_path()})}")


class RecentLoginMiddleware:
    """POSTs to RECENT_LOGIN_VIEWS need a recent sign-in (accounts.selectors.login_is_recent)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        from accounts.selectors import login_is_recent

        match = request.resolver_match
        if match is not None and match.view_name == "account_reauthenticate" and request.user.is_authenticated:
            from django.shortcuts import redirect
            from django.urls import reverse

            from accounts.selectors import user_has_second_factor

            # Someone with a second factor signs in again with it, never with the password alone.
            if user_has_second_factor(user=request.user):
                query = request.META.get("QUERY_STRING", "")
                return redirect(reverse("mfa_reauthenticate") + (f"?{query}" if query else ""))
        if (
            request.method == "POST"
            and match is not None
            and match.view_name in RECENT_LOGIN_VIEWS
            and request.user.is_authenticated
            and not login_is_recent(request=request)
        ):
            return _suspend(request, reauthentication_url(request.user))
        return None
