"""OpenID Connect endpoints (docs/openid-connect.md): discovery, userinfo, RP-initiated logout.

The ID token itself is minted by DOT's machinery through the validator (oauthflows.oauth2); the
authorization request's prompt, max_age, login_hint and nonce are read by oauthflows.authorization
and oauthflows.views.
"""

import json

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.exceptions import (
    InvalidIDTokenError,
    InvalidOIDCClientError,
    InvalidOIDCRedirectURIError,
    InvalidRequestFatalError,
)
from oauth2_provider.views.oidc import ConnectDiscoveryInfoView, RPInitiatedLogoutView

from accounts.selectors import ACR_VALUES_SUPPORTED, email_is_verified
from oauthclients.models import ClientStatus, IdTokenAlgorithm, OAuthClient
from oauthclients.redirects import redirect_host, redirect_refusal
from oauthflows.authorization import PROMPT_VALUES
from oauthflows.endpoints import server_metadata
from profiles.selectors import profile_get_for_user
from scopes.catalog import OPENID_SCOPES
from scopes.verifiers import AuthorizationServerUnavailable, audience_accepted, get_verifier
from tokens.selectors import MAX_TOKEN_LENGTH

# OpenID Connect Core §5.4: which scope releases which userinfo claim (`sub` is always there).
PROFILE_CLAIMS = ("preferred_username", "name", "zoneinfo", "locale")
EMAIL_CLAIMS = ("email", "email_verified")
REALM = "userinfo"


def openid_configuration() -> dict:
    """OpenID Connect Discovery 1.0 §3: the RFC 8414 document plus what OpenID adds."""
    issuer = settings.OAUTH_ISSUER
    return server_metadata() | {
        "scopes_supported": [*OPENID_SCOPES, *server_metadata()["scopes_supported"]],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": list(IdTokenAlgorithm.values),
        "claims_supported": [
            "sub",
            "iss",
            "aud",
            "exp",
            "iat",
            "auth_time",
            "nonce",
            "at_hash",
            "sid",
            "amr",
            "acr",
            *PROFILE_CLAIMS,
            *EMAIL_CLAIMS,
        ],
        "prompt_values_supported": list(PROMPT_VALUES),
        # docs/accounts.md: one factor, or two (acr_values asking for two makes the login ask).
        "acr_values_supported": list(ACR_VALUES_SUPPORTED),
        "claims_parameter_supported": False,
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "end_session_endpoint": issuer + settings.OAUTH_END_SESSION_PATH,
    }


class OpenIDConfigurationView(ConnectDiscoveryInfoView):
    """GET /.well-known/openid-configuration: DOT's discovery view, answering with this server's
    real endpoints and algorithms (DOT's names its own URLs and OIDC_RSA_PRIVATE_KEY's RS256)."""

    http_method_names = ["get", "head", "options"]

    def get(self, request, *args, **kwargs):
        response = JsonResponse(openid_configuration())
        response["Cache-Control"] = "public, max-age=3600"
        return response


def _bearer_error(status: int, error: str | None, description: str, *, scope: str | None = None) -> JsonResponse:
    """RFC 6750 §3: the challenge in WWW-Authenticate; the same words in the JSON body."""
    challenge = f'Bearer realm="{REALM}"'
    if error:
        challenge += f', error="{error}", error_description="{description}"'
    if scope:
        challenge += f', scope="{scope}"'
    body = {"error": error, "error_description": description} if error else {"error_description": description}
    response = JsonResponse(body, status=status)
    response["WWW-Authenticate"] = challenge
    response["Cache-Control"] = "no-store"
    return response


def userinfo_claims(*, user, scopes) -> dict:
    """OpenID Connect Core §5.3.2: `sub` always; the profile and email claims by their scopes."""
    claims = {"sub": str(user.pk)}  # the same value as introspection's `sub`
    if "profile" in scopes:
        profile = profile_get_for_user(user=user)
        claims["preferred_username"] = user.get_username()
        name = profile.name or user.get_full_name()
        if name:
            claims["name"] = name
        claims["zoneinfo"] = profile.time_zone
        claims["locale"] = profile.locale
    if "email" in scopes and user.email:
        claims["email"] = user.email
        # Only an address the user proved (allauth's confirmation mail; or an identity provider
        # authoritative for its domain, accounts/): SECURITY.md, "Accounts and the login".
        claims["email_verified"] = email_is_verified(user=user, email=user.email)
    return claims


@method_decorator(csrf_exempt, name="dispatch")  # bearer token in the header, never a cookie
class UserInfoView(View):
    """GET or POST /v2/auth/oauth2/userinfo (OpenID Connect Core §5.3), with an access token that
    was granted `openid` (RFC 6750 errors otherwise). CORS as for /v2/me (oauthflows.cors)."""

    http_method_names = ["get", "post", "options"]

    def get(self, request, *args, **kwargs):
        return self.answer(request)

    def post(self, request, *args, **kwargs):
        return self.answer(request)

    def options(self, request, *args, **kwargs):
        response = HttpResponse(status=204)
        response["Allow"] = "GET, POST, OPTIONS"
        return response

    def answer(self, request):
        # RFC 6750 §2.1: the header only (a token in the query or body is ignored); the scheme is
        # case-insensitive.
        scheme, _, raw = request.META.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
        if scheme.lower() != "bearer":
            return _bearer_error(401, None, "An access token is required: Authorization: Bearer <token>.")
        raw = raw.strip()
        if not raw or not raw.isascii() or not raw.isprintable() or " " in raw or len(raw) > MAX_TOKEN_LENGTH:
            return _bearer_error(401, "invalid_token", "The access token is invalid, expired or revoked.")
        try:
            verification = get_verifier().verify(raw)
        except AuthorizationServerUnavailable:
            verification = None
        if verification is None or not audience_accepted(verification.token.audience):
            return _bearer_error(401, "invalid_token", "The access token is invalid, expired or revoked.")
        if "openid" not in verification.token.scopes:
            return _bearer_error(
                403, "insufficient_scope", "The access token was not granted the openid scope.", scope="openid"
            )
        response = JsonResponse(userinfo_claims(user=verification.user, scopes=verification.token.scopes))
        response["Cache-Control"] = "no-store"
        return response


@method_decorator(never_cache, name="dispatch")
class LogoutView(RPInitiatedLogoutView):
    """GET/POST /auth/oauth2/logout: OpenID Connect RP-Initiated Logout 1.0 on DOT's view.

    The user always confirms (OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT). An app is identified by
    client_id or by an ID token this server signed (id_token_hint): an app users may authorize, or
    a pending one to its signed-in owner (as at sign-in). post_logout_redirect_uri must be exactly
    one of its registered redirect URIs or post-logout redirect URIs (§3.1; both reviewed with the
    client), else an error page and no redirect. Even then the browser is sent there only when
    oauthclients.redirects says so (RFC 9700 §4.11.2): never for an unverified client, whose logout
    ends with a page of ours instead. Only the session here ends: apps keep their tokens.
    """

    template_name = "oauth/logout_confirm.html"

    def get_request_application(self, id_token, client_id):
        if client_id:
            # DOT's .get() would be a 500 for an unknown client_id.
            if not isinstance(client_id, str) or len(client_id) > 255 or "\x00" in client_id:
                raise InvalidOIDCClientError()
            client = OAuthClient.objects.filter(client_id=client_id).first()
            if client is None or not self.client_known(client):
                raise InvalidOIDCClientError()
            return client
        if id_token:
            return id_token.application
        return None

    def validate_logout_request_user(self, id_token_hint, client_id):
        if id_token_hint is not None and (len(id_token_hint) > 8192 or "\x00" in id_token_hint):
            raise InvalidIDTokenError()
        try:
            return super().validate_logout_request_user(id_token_hint, client_id)
        except (ValueError, KeyError, TypeError, json.JSONDecodeError):
            raise InvalidIDTokenError() from None  # a token that is no ID token of ours

    def validate_post_logout_redirect_uri(self, application, post_logout_redirect_uri):
        if not post_logout_redirect_uri:
            return
        if application is None or not self.client_known(application):
            raise InvalidOIDCClientError()
        # Exact string match against the registered URIs (SECURITY.md), no port tolerance.
        if post_logout_redirect_uri not in application.post_logout_redirect_uri_choices:
            raise InvalidOIDCRedirectURIError(
                "post_logout_redirect_uri is not one of this client's redirect URIs or post-logout redirect URIs."
            )

    def client_known(self, client: OAuthClient) -> bool:
        """An app users may authorize, or a pending one to its signed-in owner (who tests it)."""
        if client.can_be_authorized:
            return True
        user = self.request.user
        return (
            client.status == ClientStatus.PENDING
            and client.deleted_at is None
            and not client.is_resource_server
            and user.is_authenticated
            and user.pk == client.user_id
        )

    def do_logout(self, application=None, post_logout_redirect_uri=None, state=None, token_user=None):
        if not post_logout_redirect_uri:
            return super().do_logout(application, post_logout_redirect_uri, state, token_user)
        # Decided before the session ends: a pending client's owner is known by their session.
        refusal = redirect_refusal(client=application, user=self.request.user, uri=post_logout_redirect_uri)
        if refusal is None:
            return super().do_logout(application, post_logout_redirect_uri, state, token_user)
        super().do_logout(application, None, None, token_user)  # the logout itself; its redirect to / is dropped
        context = {"logged_out": True, "refusal": refusal, "withheld_host": redirect_host(post_logout_redirect_uri)}
        return render(self.request, self.template_name, context)

    def form_invalid(self, form):
        # A field the form refuses (a NUL byte): the error page, not the form again.
        return self.error_response(InvalidRequestFatalError("The logout request is malformed."))

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        application = context.get("application")
        shown = None
        if application is not None and application.can_be_authorized:
            shown = application.shown
        elif application is not None and self.client_known(application):
            shown = application.owner_preview  # a pending client, to its owner: their own words
        context["shown"] = shown
        return context
