"""Bearer-token authentication for DRF views (RFC 6750 §2.1: the Authorization header only).

The token is checked by the verifier `OAUTH_TOKEN_VERIFIER` names (scopes.verifiers): in this
process or by introspection at the authorization server. Either way the answers are the same.
"""

import logging

from django.core.exceptions import ImproperlyConfigured
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from scopes.bearer import MalformedBearer, bearer_token
from scopes.resource import metadata_url, resource_uri
from scopes.verifiers import AuthorizationServerUnavailable, audience_accepted, get_verifier

REALM = "api"
log = logging.getLogger(__name__)


def _verifier():
    try:
        return get_verifier()
    except ImproperlyConfigured as exc:
        # `manage.py check` reports this at start (scopes.E002, E003); a server started without the
        # check answers 503 rather than 500, and says why in its log.
        log.error("Bearer tokens cannot be verified: %s", exc)
        raise AuthorizationServerUnavailable() from None


class BearerTokenAuthentication(BaseAuthentication):
    """Authenticates `Authorization: Bearer <token>`; the scheme is case-insensitive.

    A token in the query string or body is ignored (RFC 9700 §4.3.2): it neither authenticates
    nor blocks a valid header token. `request.auth` is a scopes.verifiers.VerifiedToken.
    """

    def authenticate(self, request):
        try:
            raw = bearer_token(get_authorization_header(request))
        except MalformedBearer:
            request._bearer_error = "invalid_token"
            raise exceptions.AuthenticationFailed(
                "The Authorization header must be: Bearer <access token>.", code="invalid_token"
            ) from None
        if raw is None:
            return None
        verification = _verifier().verify(raw)
        if verification is None:
            request._bearer_error = "invalid_token"
            raise exceptions.AuthenticationFailed(
                "The access token is invalid, expired or revoked.", code="invalid_token"
            )
        if not audience_accepted(verification.token.audience):
            # RFC 8707 / RFC 9700 §2.3: a token bound to another service is no token here.
            request._bearer_error = "invalid_token"
            raise exceptions.AuthenticationFailed(
                "The access token is not meant for this service: its audience is another resource."
                if verification.token.audience
                else "This service accepts only tokens bound to it: request one with resource="
                + str(resource_uri() or "")
                + " (RFC 8707).",
                code="invalid_token",
            )
        return verification.user, verification.token

    def authenticate_header(self, request):
        challenge = f'Bearer realm="{REALM}"'
        error = getattr(request, "_bearer_error", None)
        if error:
            challenge += f', error="{error}"'
        resource = resource_uri()
        if resource:
            # RFC 9728 §5.1: where an agent learns which authorization server and scopes to ask for.
            challenge += f', resource_metadata="{metadata_url(resource)}"'
        return challenge
