"""Which origin may read which answer: CORS for single-page apps (OAuth 2.0 for Browser-Based Apps).

django-cors-headers writes the headers (settings.CORS_*); the `check_request_enabled` signal
handler below decides, per request, whether the request's Origin is allowed:

- the metadata document (RFC 8414) is public: any origin may read it, and so is the open
  registration endpoint (RFC 7591: browser-based agents such as MCP Inspector register from a page);
- the token and revocation endpoints: the exact origins of the redirect URIs registered by the
  approved public client the request names (client_id in the body, or HTTP Basic). A preflight
  carries no body, so it is answered for an origin of any approved public client's redirect URIs
  (one cached set of them all: selectors.cors_registered_origins); the actual request is then
  readable only by that client's own origins. Unverified clients count as approved ones here;
  pending, rejected and deleted clients get none.

- the project's own bearer API (`/v2/me`) and OpenID Connect's userinfo: the origins of every
  approved public client, for the preflight and the call alike (the bearer token is what authorizes it).

Never with credentials (CORS_ALLOW_CREDENTIALS is off): these endpoints use no cookies.
"""

from django.conf import settings
from django.db import DatabaseError, transaction

from oauthflows.selectors import cors_origin_is_registered, cors_origins_for_client, cors_registered_origins_forget
from plumbing.ratelimit import per_client

BEARER_API_PATH = "/v2/me"


def cors_allow_request(sender, request, **kwargs) -> bool:
    """django-cors-headers' check_request_enabled signal: may this request's Origin read the answer?"""
    origin = request.headers.get("Origin")
    path = request.path_info
    if not origin:
        return False
    if path in (
        settings.OAUTH_METADATA_PATH,
        settings.OAUTH_OPENID_CONFIGURATION_PATH,
        settings.OAUTH_REGISTRATION_PATH,
    ):
        return True  # public documents, and open registration (no cookies, no credentials)
    if path in (BEARER_API_PATH, settings.OAUTH_USERINFO_PATH):
        # The project's own bearer API: the token authorizes the call; a page may read the answer
        # from the origin of any approved public client (never with cookies: no credentials).
        try:
            return cors_origin_is_registered(origin=origin)
        except DatabaseError:
            return False
    if path not in (settings.OAUTH_TOKEN_PATH, settings.OAUTH_REVOKE_PATH):
        return False  # asked for every other request too: decide without the database
    try:
        if request.method == "OPTIONS":
            return cors_origin_is_registered(origin=origin)
        client_id = per_client(request)
        return bool(client_id) and origin in cors_origins_for_client(client_id=client_id)
    except DatabaseError:
        return False  # the view answers 503 by itself; no CORS grant without the facts


def cors_origins_changed(sender, instance, **kwargs) -> None:
    """post_save of a client: forget the preflights' origin set now, and again once the change is
    committed (a preflight in between may have rebuilt it from the rows as they were)."""
    cors_registered_origins_forget()
    transaction.on_commit(cors_registered_origins_forget)
