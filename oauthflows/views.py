"""The authorization endpoint (consent) and the token endpoint, on django-oauth-toolkit's mixin."""

import json

from django.conf import settings
from django.contrib.auth.mixins import LoginRequiredMixin
from django.contrib.auth.views import redirect_to_login
from django.db import transaction
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.oauth2_backends import _add_iss_to_redirect
from oauth2_provider.views.mixins import OAuthLibMixin
from oauthlib.common import add_params_to_uri

from oauthclients.models import ClientStatus
from oauthflows.authorization import (
    AuthorizationPageError,
    AuthorizationRedirectError,
    AuthorizationRequest,
    authorization_request_validate,
)
from oauthflows.oauth2 import BodyError, json_body_pairs, request_started_at
from scopes.catalog import SCOPES, group_by_level

# RFC 6749 §5.2: the only error codes the token endpoint returns.
TOKEN_ERRORS = {
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
}
TOKEN_RESPONSE_FIELDS = ("access_token", "refresh_token", "token_type", "expires_in", "scope")
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
JSON_CONTENT_TYPE = "application/json"
GRANT_TYPES = ("authorization_code", "refresh_token")
CREDENTIAL_PARAMS = ("client_secret", "code", "refresh_token", "code_verifier", "password")


def ascii_description(text: str) -> str:
    """RFC 6749 §5.2: error_description is printable ASCII (%x20-21 / %x23-5B / %x5D-7E)."""
    text = str(text).replace("“", "'").replace("”", "'").replace("’", "'")
    return "".join(ch for ch in text if 0x20 <= ord(ch) <= 0x7E and ch not in '"\\')


def _issuer() -> str:
    return settings.OAUTH_ISSUER


def _error_redirect(error: AuthorizationRedirectError) -> HttpResponseRedirect:
    params = [("error", error.error), ("error_description", ascii_description(error.description))]
    if error.state is not None:
        params.append(("state", error.state))
    # RFC 9207: the issuer travels with every authorization response, errors included.
    return HttpResponseRedirect(_add_iss_to_redirect(add_params_to_uri(error.redirect_uri, params), _issuer()))


def _error_page(request, error: AuthorizationPageError) -> HttpResponse:
    return render(
        request, "oauth/error.html", {"title": error.title, "message": error.message}, status=400
    )


@method_decorator(never_cache, name="dispatch")
class AuthorizationMixin(LoginRequiredMixin):
    """Not logged in: Django's login page, then back to the same authorization request (GET)."""

    def handle_no_permission(self):
        query = self.request.META.get("QUERY_STRING", "")
        return redirect_to_login(f"{settings.OAUTH_AUTHORIZE_PATH}?{query}" if query else settings.OAUTH_AUTHORIZE_PATH)

    def validated(self) -> AuthorizationRequest:
        # Always the query string: the consent form posts back to a URL carrying the same query,
        # and the POST body carries nothing but the CSRF token.
        return authorization_request_validate(params=self.request.GET, user=self.request.user)


class AuthorizeView(AuthorizationMixin, View):
    """GET /auth/oauth2/authorize: validate, then show the consent page."""

    def get(self, request, *args, **kwargs):
        try:
            authz = self.validated()
        except AuthorizationPageError as error:
            return _error_page(request, error)
        except AuthorizationRedirectError as error:
            return _error_redirect(error)
        query = request.META.get("QUERY_STRING", "")
        context = {
            "authz": authz,
            "client": authz.client,
            "scope_groups": group_by_level(authz.scopes),
            "allow_url": f"{settings.OAUTH_AUTHORIZE_PATH}/allow?{query}",
            "deny_url": f"{settings.OAUTH_AUTHORIZE_PATH}/deny?{query}",
        }
        return render(request, "oauth/consent.html", context)


class AuthorizeDenyView(AuthorizationMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            authz = self.validated()
        except AuthorizationPageError as error:
            return _error_page(request, error)
        except AuthorizationRedirectError as error:
            return _error_redirect(error)
        return _error_redirect(
            AuthorizationRedirectError(
                "access_denied",
                "The user denied the request.",
                redirect_uri=authz.redirect_uri,
                state=authz.state,
            )
        )


class AuthorizeAllowView(AuthorizationMixin, OAuthLibMixin, View):
    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        try:
            authz = self.validated()
        except AuthorizationPageError as error:
            return _error_page(request, error)
        except AuthorizationRedirectError as error:
            return _error_redirect(error)
        # oauthlib sees the validated, normalised request (see oauthflows.oauth2.Backend).
        request.oauth_normalized_query = authz.oauthlib_query()
        credentials = {
            "client_id": authz.client.client_id,
            "redirect_uri": authz.redirect_uri,
            "response_type": "code",
            "state": authz.state,
        }
        if authz.client.status == ClientStatus.PENDING:
            credentials["pending_owner_preview"] = True  # validated above: the user is the owner
        if authz.code_challenge:
            credentials["code_challenge"] = authz.code_challenge
            credentials["code_challenge_method"] = "S256"
        try:
            uri, _headers, _body, _status = self.create_authorization_response(
                request=request, scopes=" ".join(authz.scopes), credentials=credentials, allow=True
            )
        except OAuthToolkitError as exc:
            # Everything was validated above, so this is a race (e.g. the client was rejected a
            # moment ago); report it to the verified redirect URI as RFC 6749 §4.1.2.1 says.
            return _error_redirect(
                AuthorizationRedirectError(
                    exc.oauthlib_error.error,
                    exc.oauthlib_error.description or "The request could not be completed.",
                    redirect_uri=authz.redirect_uri,
                    state=authz.state,
                )
            )
        return HttpResponseRedirect(uri)  # 302, never 307 (SECURITY.md)


def _token_error(error: str, description: str, *, basic_used: bool = False) -> JsonResponse:
    if error not in TOKEN_ERRORS:
        error = "invalid_request"
    status = 401 if error == "invalid_client" else 400
    if error == "invalid_client":
        # Unknown client, wrong secret, revoked secret, unapproved client: one answer for all.
        description = "Client authentication failed."
    response = JsonResponse({"error": error, "error_description": ascii_description(description)}, status=status)
    response["Cache-Control"] = "no-store"
    response["Pragma"] = "no-cache"
    if error == "invalid_client":
        response["WWW-Authenticate"] = 'Basic realm="oauth"' if basic_used else 'Bearer realm="oauth"'
    return response


@method_decorator(csrf_exempt, name="dispatch")
class TokenView(OAuthLibMixin, View):
    """POST /v2/auth/oauth2/token: authorization_code and refresh_token grants (spec §4.2, §4.3)."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        basic_used = request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("basic ")
        problem = self._precheck(request, basic_used)
        if problem:
            return _token_error(*problem, basic_used=basic_used)
        started = request_started_at.set(timezone.now())
        try:
            # One transaction per exchange: the code or refresh-token row lock is held until the
            # new tokens are committed, so concurrent duplicates have exactly one winner.
            with transaction.atomic():
                _url, headers, body, status = self.create_token_response(request)
        except BodyError as exc:
            return _token_error("invalid_request", str(exc), basic_used=basic_used)
        finally:
            request_started_at.reset(started)
        return self._shape(body, status, basic_used)

    def _precheck(self, request, basic_used: bool) -> tuple[str, str] | None:
        """Refuse malformed requests before any lookup or hashing."""
        content_type = request.content_type
        if content_type not in (FORM_CONTENT_TYPE, JSON_CONTENT_TYPE):
            return "invalid_request", "Send the request body as application/x-www-form-urlencoded or application/json."
        if any(name in request.GET for name in CREDENTIAL_PARAMS):
            return "invalid_request", "Credentials belong in the request body, never in the URL."
        if content_type == FORM_CONTENT_TYPE:
            repeated = sorted(key for key, values in request.POST.lists() if len(values) > 1)
            if repeated:
                return "invalid_request", "Each parameter may be sent only once: " + ", ".join(repeated) + "."
            params = request.POST.dict()
        else:
            try:
                params = dict(json_body_pairs(request.body))
            except BodyError as exc:
                return "invalid_request", str(exc)
        if basic_used and "client_secret" in params:
            return "invalid_request", "Use one client authentication method: HTTP Basic or client_secret in the body, not both."
        grant_type = params.get("grant_type")
        if not grant_type:
            return "invalid_request", "The grant_type parameter is required."
        if grant_type not in GRANT_TYPES:
            return "unsupported_grant_type", _DEFAULT_DESCRIPTIONS["unsupported_grant_type"]
        if grant_type == "authorization_code" and not params.get("redirect_uri"):
            # RFC 6749 §4.1.3: required because the authorization request always carries one.
            return "invalid_request", "The redirect_uri parameter is required and must equal the authorization request's."
        return None

    def _shape(self, body: str, status: int, basic_used: bool) -> JsonResponse:
        try:
            data = json.loads(body or "{}")
        except ValueError:
            data = {}
        if status != 200:
            return _token_error(
                data.get("error", "invalid_request"),
                data.get("error_description") or _DEFAULT_DESCRIPTIONS.get(data.get("error"), "The request is invalid."),
                basic_used=basic_used,
            )
        payload = {
            "access_token": data["access_token"],
            "refresh_token": data["refresh_token"],
            "token_type": "bearer",
            "expires_in": int(data.get("expires_in", settings.OAUTH_ACCESS_TOKEN_LIFETIME)),
            "scope": data.get("scope", "") or "",
        }
        response = JsonResponse(payload)
        response["Cache-Control"] = "no-store"
        response["Pragma"] = "no-cache"
        return response


_DEFAULT_DESCRIPTIONS = {
    "invalid_grant": "The authorization code or refresh token is invalid, expired, revoked or was issued to another client.",
    "unsupported_grant_type": "grant_type must be authorization_code or refresh_token.",
    "invalid_scope": "The requested scope is invalid or wider than the original grant.",
    "unauthorized_client": "This client may not use this grant type.",
}
