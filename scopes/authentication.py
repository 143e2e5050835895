"""Bearer-token authentication for DRF views (RFC 6750 §2.1: the Authorization header only)."""

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from oauthflows.oauth2 import access_token_get_valid

REALM = "api"


class BearerTokenAuthentication(BaseAuthentication):
    """Authenticates `Authorization: Bearer <token>`; the scheme is case-insensitive.

    A token in the query string or body is ignored (RFC 9700 §4.3.2): it neither authenticates
    nor blocks a valid header token.
    """

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != b"bearer":
            return None
        if len(parts) != 2:
            request._bearer_error = "invalid_token"
            raise exceptions.AuthenticationFailed(
                "The Authorization header must be: Bearer <access token>.", code="invalid_token"
            )
        try:
            raw = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raw = ""
        access_token = access_token_get_valid(raw)
        if access_token is None:
            request._bearer_error = "invalid_token"
            raise exceptions.AuthenticationFailed(
                "The access token is invalid, expired or revoked.", code="invalid_token"
            )
        return access_token.user, access_token

    def authenticate_header(self, request):
        error = getattr(request, "_bearer_error", None)
        if error:
            return f'Bearer realm="{REALM}", error="{error}"'
        return f'Bearer realm="{REALM}"'
