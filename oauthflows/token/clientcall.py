"""What one request to a client endpoint tells the hooks into DOT, and back: the token, revocation
and introspection views set it, the validator (oauthflows.token.oauth2) and the token exchange grant
(oauthflows.token.exchange) read and fill it. Its own module, so that both can import it."""

import contextvars
from dataclasses import dataclass

from oauthclients.models import AccessToken, OAuthClient


@dataclass
class ClientCall:
    """What one request to a client endpoint (token, revoke, introspect) tells the validator, and back.

    Set by the endpoint view for the length of the request: whether a resource server may use it
    (introspection only), and, once authenticated, the client (so the view and the rate limiter can
    tell a resource server's call from an app's).
    """

    resource_servers_allowed: bool = False
    client: OAuthClient | None = None
    # A code or refresh token redeemed by its one-statement fast path (tokens.redemption): if the
    # request is refused after all, the endpoint rolls its transaction back, undoing the claim.
    claimed: bool = False
    # The access token a token request saved: sent with DOT's app_authorized once committed.
    issued: AccessToken | None = None


client_call: contextvars.ContextVar[ClientCall | None] = contextvars.ContextVar("client_call", default=None)


def issued_tell(access: AccessToken) -> None:
    """Tell the token endpoint which access token this request saved (sent with app_authorized)."""
    call = client_call.get()
    if call is not None:
        call.issued = access
