"""The authorization endpoint: consent page and the Allow/Deny answers (spec §4.1, RFC 6749 §4.1)."""

from django.conf import settings
from django.contrib.auth.mixins import LoginRequiredMixin
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.cache import never_cache
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
from oauthflows.endpoints import ascii_description
from scopes.catalog import group_by_level


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
