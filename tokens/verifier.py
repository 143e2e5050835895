"""The token verifier for resource endpoints served by the authorization server's own process.

Plugged into scopes by `OAUTH_TOKEN_VERIFIER = "tokens.verifier.LocalTokenVerifier"`; other
services use scopes.introspection.IntrospectionVerifier and get the same answers over HTTP.
"""

from scopes.verifiers import TokenVerifier, Verification, VerifiedToken
from tokens.selectors import access_token_get_valid


class LocalTokenVerifier(TokenVerifier):
    def verify(self, raw_token: str) -> Verification | None:
        # One indexed query, joined to the client, the user and the profile (GET /v2/me needs it).
        access_token = access_token_get_valid(raw_token)
        if access_token is None:
            return None
        scopes = tuple(access_token.scope.split())
        return Verification(
            user=access_token.user,
            token=VerifiedToken(
                scopes=scopes,
                unrestricted=not scopes,
                client_id=access_token.application.client_id,
                subject=str(access_token.user_id),
                expires_at=int(access_token.expires.timestamp()),
                audience=tuple(access_token.resource or ()),
            ),
        )
