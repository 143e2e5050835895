"""The authorization endpoint: consent page and the Allow/Deny answers (spec §4.1, RFC 6749 §4.1)."""

from functools import lru_cache
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.translation import get_language, gettext
from django.views import View
from django.views.decorators.cache import never_cache
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.oauth2_backends import _add_iss_to_redirect
from oauth2_provider.views.mixins import OAuthLibMixin
from oauthlib.common import add_params_to_uri

from accounts.selectors import ACR_TWO_FACTORS, session_amr, user_has_second_factor
from oauthclients.models import OAuthClient
from oauthclients.policy import client_awaiting_review
from oauthclients.redirects import redirect_host, redirect_refusal, redirect_trusted
from oauthclients.selectors import resource_names, verified_name_like
from oauthclients.validators import mixed_script_words
from oauthflows.pages.authorization import (
    MAX_STATE_LENGTH,
    AuthorizationPageError,
    AuthorizationRedirectError,
    AuthorizationRequest,
    authorization_request_validate,
    authorization_target_validate,
)
from oauthflows.pages.consentshown import FIELD as CONSENT_SHOWN_FIELD
from oauthflows.pages.consentshown import consent_shown_mark, consent_was_shown
from oauthflows.pages.selectors import connected_app_get_for_user, connected_app_list_for_user, session_auth_time
from oauthflows.pages.services import connected_app_revoke, consent_deny, session_sid_get_or_create
from oauthflows.token.endpoints import ascii_description
from plumbing.pagecache import render_filled
from profiles.context_processors import time_zone_for_user
from profiles.selectors import profile_get_for_user
from scopes.catalog import OPENID_SCOPES, group_by_resource
from tokens.consents import StandingConsent, consent_covers, consent_record, consent_records_with_code, consent_standing


class ClientRedirect(HttpResponseRedirect):
    """A 302 to a redirect URI already checked against the client's registered ones.

    Its scheme may be a native app's private-use scheme (RFC 8252 §7.1), which Django's redirect
    refuses by default; the URI was matched against the registration, so its scheme is trusted.
    """

    def __init__(self, redirect_to: str, *args, **kwargs):
        self.allowed_schemes = [*HttpResponseRedirect.allowed_schemes, urlsplit(redirect_to).scheme]
        super().__init__(redirect_to, *args, **kwargs)


def _withheld(request, *, client: OAuthClient, redirect_uri: str, consent_shown: bool, reason: str = ""):
    """The 400 page instead of a redirect that oauthclients.redirects refuses (RFC 9700 §4.11.2),
    or None when the browser may be sent to `redirect_uri`."""
    refusal = redirect_refusal(client=client, user=request.user, uri=redirect_uri, consent_shown=consent_shown)
    if refusal is None:
        return None
    title = gettext("Unverified application") if client.is_unverified else gettext("Application not reviewed")
    details = {"withheld_host": redirect_host(redirect_uri), "reason": reason}
    return _error_page(request, AuthorizationPageError(title, refusal, details=details))


def _error_redirect(request, error: AuthorizationRedirectError, *, consent_shown: bool = False) -> HttpResponse:
    """The error sent back to the redirect URI (RFC 6749 §4.1.2.1), if oauthclients.redirects
    allows a redirect there now; else the 400 page."""
    withheld = _withheld(
        request,
        client=error.client,
        redirect_uri=error.redirect_uri,
        consent_shown=consent_shown,
        reason=f"{error.error}: {ascii_description(error.description)}",
    )
    if withheld is not None:
        return withheld
    params = [("error", error.error), ("error_description", ascii_description(error.description))]
    if error.state is not None:
        params.append(("state", error.state))
    # RFC 9207: the issuer travels with every authorization response, errors included.
    return ClientRedirect(_add_iss_to_redirect(add_params_to_uri(error.redirect_uri, params), settings.OAUTH_ISSUER))


def _error_page(request, error: AuthorizationPageError) -> HttpResponse:
    context = {"title": error.title, "message": error.message, "details": error.details}
    return render(request, "oauth/error.html", context, status=400)


@method_decorator(never_cache, name="dispatch")
class AuthorizationMixin(LoginRequiredMixin):
    """Not logged in: Django's login page, then back to the same authorization request (GET)."""

    def handle_no_permission(self):
        # The client and its redirect URI first: a request that can only fail gets its error page
        # now, not after the user has typed a password for nothing.
        try:
            client = authorization_target_validate(params=self.request.GET)
        except AuthorizationPageError as error:
            return _error_page(self.request, error)
        if "none" in (self.request.GET.get("prompt") or "").split():
            # OpenID Connect Core §3.1.2.6: no login page may be shown, and nobody is logged in.
            state = self.request.GET.get("state") or None
            return _error_redirect(
                self.request,
                AuthorizationRedirectError(
                    "login_required",
                    "The user is not logged in, and prompt=none forbids asking them to.",
                    client=client,
                    redirect_uri=self.request.GET["redirect_uri"],
                    state=state if state is None or len(state) <= MAX_STATE_LENGTH else None,
                ),
            )
        # The login about to happen is fresh: prompt=login and max_age are met by it (a second
        # password prompt after it would be one too many).
        return _login_again(self.request)

    def validated(self) -> tuple[AuthorizationRequest | None, HttpResponse | None]:
        """The validated request, or the response that refuses it (error page or error redirect).

        Always from the query string: the consent form posts back to a URL carrying the same
        query, and the POST body carries nothing but the CSRF token and the consent page's mark.
        """
        try:
            return authorization_request_validate(params=self.request.GET, user=self.request.user), None
        except AuthorizationPageError as error:
            return None, _error_page(self.request, error)
        except AuthorizationRedirectError as error:
            return None, _error_redirect(self.request, error, consent_shown=self.consent_shown())

    def consent_shown(self) -> bool:
        """Whether the user was shown this request's consent page: only ever on its Allow or Deny
        POST, carrying the page's mark (oauthflows.pages.consentshown)."""
        return self.request.method == "POST" and consent_was_shown(self.request)


def consent_scopes_html(scopes: tuple[str, ...], *, part: str = "") -> str:
    """The consent page's list of what the app asks for, by resource: the same HTML for the same
    scopes in the same language (catalog text only, nothing of the user or the request), so
    rendered once per set and language. `part` is "new" or "granted" when a step-up shows what it
    adds apart from what was allowed."""
    return _consent_scopes_html(scopes, part, get_language())


@lru_cache(maxsize=256)
def _consent_scopes_html(scopes: tuple[str, ...], part: str, language: str | None) -> str:
    # Keyed by the language too: one person's language never reaches another person's page.
    resources = group_by_resource(scopes)
    context = {"resources": resources, "higher_risk_count": sum(1 for r in resources if r.higher_risk)}
    if part == "new":
        context |= {"heading": gettext("It will also be able to:"), "heading_id": "access-new-title"}
    elif part == "granted":
        context |= {"heading": gettext("You already allowed it to:"), "heading_id": "access-granted-title"}
        context["higher_risk_count"] = 0  # the "listed first" note belongs to what is new
    return render_to_string("oauth/_consent_scopes.html", context)


class AuthorizeView(AuthorizationMixin, OAuthLibMixin, View):
    """GET /auth/oauth2/authorize: validate, then show the consent page...

    ...unless the user already granted this approved client at least these scopes, after its last
    approval, and the app did not send `prompt=consent`: then the code is issued at once, as GitHub
    and Google do (a user who wants to be asked again revokes the app under Connected apps).
    """

    def get(self, request, *args, **kwargs):
        authz, refusal = self.validated()
        if refusal:
            return refusal
        # OpenID Connect Core §3.1.2.1: prompt=login (or select_account) and an exceeded max_age
        # ask for the password again, then come back to this request without them.
        if authz.prompt & {"login", "select_account"} or _login_too_old(request, authz.max_age):
            if "none" in authz.prompt:
                return _error_redirect(
                    request,
                    AuthorizationRedirectError(
                        "login_required",
                        "The last login is older than max_age, and prompt=none forbids asking again.",
                        client=authz.client,
                        redirect_uri=authz.redirect_uri,
                        state=authz.state,
                    ),
                )
            return _login_again(request)
        # OpenID Connect Core §3.1.2.1 acr_values: an app that asks for two factors gets the
        # second one asked for now (step-up), when the user has one; the ID token's acr says which.
        if _second_factor_wanted(request):
            if "none" in authz.prompt:
                return _error_redirect(
                    request,
                    AuthorizationRedirectError(
                        "interaction_required",
                        "acr_values asks for a second factor, and prompt=none forbids asking for it.",
                        client=authz.client,
                        redirect_uri=authz.redirect_uri,
                        state=authz.state,
                    ),
                )
            return redirect_to_login(request.get_full_path(), login_url=reverse("mfa_reauthenticate"))
        # One lookup: whether the page may be skipped, and (on a step-up) what was granted before.
        standing = consent_standing(user=request.user, client=authz.client)
        covered = "consent" not in authz.prompt and consent_covers(
            standing=standing, client=authz.client, scopes=authz.scopes
        )
        if covered:
            return _issue_code(self, request, authz, consent_shown=False)
        if "none" in authz.prompt:
            return _error_redirect(
                request,
                AuthorizationRedirectError(
                    "consent_required",
                    "The user has not authorized these scopes, and prompt=none forbids asking them.",
                    client=authz.client,
                    redirect_uri=authz.redirect_uri,
                    state=authz.state,
                ),
            )
        query = request.META.get("QUERY_STRING", "")
        this_request = f"{settings.OAUTH_AUTHORIZE_PATH}?{query}" if query else settings.OAUTH_AUTHORIZE_PATH
        client = authz.client
        mixed = mixed_script_words(client.name) if client.is_unverified else []
        resources = resource_names(authz.resources) if authz.resources else []
        # What every person who sees this app ask for these scopes is shown alike: the page is
        # rendered once per these values and language, then filled in (plumbing.pagecache).
        shared = {
            # Only what the template reads of the request and the client, by value.
            "authz": {
                "is_unrestricted": authz.is_unrestricted,
                "resources": authz.resources,
                "redirect_host": authz.redirect_host,
            },
            "client": {
                "is_self_registered": client.is_self_registered,
                "status": client.status,
                "user": {"get_username": "" if client.is_self_registered else client.user.get_username()},
            },
            # Users see what was approved; only the owner reaches a pending client's page, to test it.
            "shown": client.owner_preview if client_awaiting_review(client) else client.shown,
            # A self-registered app named like a verified one is flagged (docs/agents.md).
            "lookalike_of": verified_name_like(client) if client.is_unverified else None,
            "mixed_script_words": mixed,
            # Quoted as typed, each word in its own direction, for the sentence that names them.
            "mixed_script_quoted": format_html_join(", ", "“<bdi>{}</bdi>”", ((word,) for word in mixed)),
            # RFC 8707: the services a bound token is for, by name (and URI).
            "resources": resources,
            "resources_list": format_html_join(
                ", ",
                "<strong>{}</strong>{}",  # resource servers: names an administrator gave
                (
                    (name, format_html(' (<span class="mono">{}</span>)', uri) if name != uri else "")
                    for name, uri in resources
                ),
            ),
            # A client ID metadata document's host: who published the name shown above.
            "document_host": urlsplit(client.client_id).netloc
            if client.registration_source == OAuthClient.RegistrationSource.CIMD
            else "",
            "scopes_html": _scopes_html(authz, standing),
            # OpenID Connect: "Sign you in", and what profile and email let it read.
            "identity_lines": [description for name, description in OPENID_SCOPES.items() if name in authz.scopes],
            "consent_shown_field": CONSENT_SHOWN_FIELD,
            "user_time_zone": time_zone_for_user(request.user),
        }
        # This person's and this request's: put in per request, escaped.
        slots = {
            "signed_in_name": profile_get_for_user(user=request.user).name or request.user.get_full_name(),
            "allow_url": f"{settings.OAUTH_AUTHORIZE_PATH}/allow?{query}",
            "deny_url": f"{settings.OAUTH_AUTHORIZE_PATH}/deny?{query}",
            # "Not you?": log out, log in again, and come back to this same request.
            "switch_account_next": f"{settings.LOGIN_URL}?{urlencode({'next': this_request})}",
            # What lets the answer redirect to a client nobody reviewed (oauthclients.redirects).
            "consent_shown_mark": ""
            if redirect_trusted(client=client, user=request.user)
            else consent_shown_mark(request),
        }
        return render_filled(request, "oauth/consent.html", shared, slots)


def _scopes_html(authz: AuthorizationRequest, standing: StandingConsent | None) -> str:
    """What the app asks for; on a step-up (MCP 2025-11-25: a new request after an
    insufficient_scope answer), what it adds first, then what the user already allowed."""
    if not authz.api_scopes:
        return ""
    granted = standing.scopes if standing is not None and not standing.unrestricted else frozenset()
    already = tuple(name for name in authz.api_scopes if name in granted)
    new = tuple(name for name in authz.api_scopes if name not in granted)
    if not already or not new:
        return consent_scopes_html(tuple(authz.api_scopes))
    return consent_scopes_html(new, part="new") + consent_scopes_html(already, part="granted")


class AuthorizeDenyView(AuthorizationMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        authz, refusal = self.validated()
        if refusal:
            return refusal
        consent_deny(user=request.user, client=authz.client)
        return _error_redirect(
            request,
            AuthorizationRedirectError(
                "access_denied",
                "The user denied the request.",
                client=authz.client,
                redirect_uri=authz.redirect_uri,
                state=authz.state,
            ),
            consent_shown=self.consent_shown(),
        )


class AuthorizeAllowView(AuthorizationMixin, OAuthLibMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        authz, refusal = self.validated()
        if refusal:
            return refusal
        return _issue_code(self, request, authz, consent_shown=self.consent_shown())


def _second_factor_wanted(request) -> bool:
    """acr_values names the two-factor level, this session has not used a second factor, and the
    user has one to use (accounts.selectors)."""
    wanted = (request.GET.get("acr_values") or "").split()
    if ACR_TWO_FACTORS not in wanted or "mfa" in session_amr(request=request):
        return False
    return user_has_second_factor(user=request.user)


def _login_too_old(request, max_age: int | None) -> bool:
    """OpenID Connect Core §3.1.2.1: more than max_age seconds since the user typed a password."""
    if max_age is None:
        return False
    auth_time = session_auth_time(request=request)
    return auth_time is None or (timezone.now() - auth_time).total_seconds() > max_age


def _login_again(request) -> HttpResponse:
    """The login page, then this authorization request again without what sent it there
    (prompt=login, select_account, max_age): a fresh login satisfies them, and they must not
    send the user round once more. login_hint stays for the login page (accounts.views.LoginView)."""
    query = request.GET.copy()
    prompt = (query.get("prompt") or "").split()
    kept = [value for value in prompt if value not in ("login", "select_account")]
    if kept == prompt and "max_age" not in query:
        encoded = request.META.get("QUERY_STRING", "")  # nothing to take out: the request as sent
    else:
        query.pop("max_age", None)
        if kept:
            query["prompt"] = " ".join(kept)
        else:
            query.pop("prompt", None)
        encoded = query.urlencode()
    return redirect_to_login(f"{settings.OAUTH_AUTHORIZE_PATH}?{encoded}" if encoded else settings.OAUTH_AUTHORIZE_PATH)


def _issue_code(view: OAuthLibMixin, request, authz: AuthorizationRequest, *, consent_shown: bool) -> HttpResponse:
    """The user allowed (just now, or before for at least these scopes): a code, to the redirect URI."""
    # Checked before a code exists: no code is made for a redirect that will not happen.
    withheld = _withheld(request, client=authz.client, redirect_uri=authz.redirect_uri, consent_shown=consent_shown)
    if withheld is not None:
        return withheld
    credentials = {
        # The client validated above: DOT's validator reuses it (is_usable is asked again)
        # instead of loading it a second time.
        "client": authz.client,
        "client_id": authz.client.client_id,
        "redirect_uri": authz.redirect_uri,
        "response_type": "code",
        "state": authz.state,
    }
    if client_awaiting_review(authz.client):
        credentials["pending_owner_preview"] = True  # validated above: the user is the owner
    # On PostgreSQL the validator writes the consent and its audit row with the code, in one
    # statement (tokens.consents.consent_record with the code); elsewhere they follow it here.
    credentials["record_consent"] = consent_records_with_code()
    # Always set: oauthlib would otherwise serve the query's last `resource` value as a string.
    credentials["resource"] = list(authz.resources)
    if authz.code_challenge:
        credentials["code_challenge"] = authz.code_challenge
        credentials["code_challenge_method"] = "S256"
    # The login time, kept with the code: an ID token's and a JWT access token's auth_time.
    credentials["auth_time"] = session_auth_time(request=request)
    if authz.is_openid:
        # The ID token's sid, kept with the code (oauthflows.token.oauth2).
        credentials["sid"] = session_sid_get_or_create(session=request.session)
        # RFC 8176: how the user signed in (the ID token's amr and acr).
        credentials["amr"] = " ".join(session_amr(request=request))
    try:
        # oauthlib's code grant, given the validated, normalised request (oauthflows.token.oauth2).
        uri = view.get_oauthlib_core().create_validated_authorization_response(
            request, authz.oauthlib_query(), list(authz.scopes), credentials
        )
    except OAuthToolkitError as exc:
        # Everything was validated above, so this is a race (e.g. the client was rejected a
        # moment ago); report it to the verified redirect URI as RFC 6749 §4.1.2.1 says.
        return _error_redirect(
            request,
            AuthorizationRedirectError(
                exc.oauthlib_error.error,
                exc.oauthlib_error.description or "The request could not be completed.",
                client=authz.client,
                redirect_uri=authz.redirect_uri,
                state=authz.state,
            ),
            consent_shown=consent_shown,
        )
    if not credentials["record_consent"]:
        consent_record(user=request.user, client=authz.client, scopes=authz.scopes)
    return ClientRedirect(uri)  # 302, never 307 (SECURITY.md)


@method_decorator(never_cache, name="dispatch")
class ConnectedAppsView(LoginRequiredMixin, View):
    """GET /settings/apps/: every app the user has authorized, and a way to cut each off."""

    def get(self, request):
        return render(request, "oauth/connected_apps.html", {"apps": connected_app_list_for_user(user=request.user)})


@method_decorator(never_cache, name="dispatch")
class ConnectedAppRevokeView(LoginRequiredMixin, View):
    """GET: confirm. POST: kill all of this app's tokens for this user at once."""

    def get(self, request, client_id):
        app = connected_app_get_for_user(user=request.user, client_id=client_id)
        return render(request, "oauth/connected_app_revoke.html", {"app": app})

    def post(self, request, client_id):
        app = connected_app_get_for_user(user=request.user, client_id=client_id)
        connected_app_revoke(user=request.user, client=app.client)
        # The name users were shown (the approved one), as on every page, never an unreviewed edit.
        messages.success(
            request, gettext("%(name)s no longer has access to your account.") % {"name": app.client.shown.name}
        )
        return HttpResponseRedirect(reverse("oauth:connected_apps"), status=303)
