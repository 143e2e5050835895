"""OpenID Connect RP-Initiated Logout 1.0 (docs/openid-connect.md): the page an app sends the
browser to, on django-oauth-toolkit's view.
"""

import json

from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from oauth2_provider.exceptions import (
    InvalidIDTokenError,
    InvalidOIDCClientError,
    InvalidOIDCRedirectURIError,
    InvalidRequestFatalError,
)
from oauth2_provider.views.oidc import RPInitiatedLogoutView

from oauthclients.models import OAuthClient
from oauthclients.policy import Door, client_may_act
from oauthclients.redirects import redirect_host, redirect_refusal


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
        return client_may_act(client, self.request.user, Door.AUTHORIZE)

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
