"""Which origin may read which answer: CORS for single-page apps (OAuth 2.0 for Browser-Based Apps).

django-cors-headers writes the headers (settings.CORS_*); the `check_request_enabled` signal
handler below decides, per request, whether the request's Origin is allowed:

- the metadata document (RFC 8414) is public: any origin may read it, and so is the open
  registration endpoint (RFC 7591: browser-based agents such as MCP Inspector register from a page);
- the token and revocation endpoints, and RFC 7592's client configuration endpoint (whose URL
  names the client): the exact origins of the redirect URIs registered by the public client the request
  names (client_id in the body, or HTTP Basic), approved or unverified (self-registered: a browser
  agent must be able to redeem its own codes). A preflight carries no body, so it is answered for
  an origin of any such client; the actual request is then readable only by that client's own
  origins. Pending, rejected and deleted clients get none, nor do confidential ones;
- the project's own bearer API (`/v2/me`) and OpenID Connect's userinfo: the origins of approved
  public clients only, for the preflight and the call alike. A registration is free and anyone's:
  if it opened these, the "approved origins" would be every origin anyone cared to name.

Each decision looks up the one origin asked about (cors_origin_is_registered below: an indexed
row per origin, an answer kept per origin in a bounded cache), so that its cost does not grow with
the number of registered clients (issue 28, finding 3; bench scenario 8).

Never with credentials (CORS_ALLOW_CREDENTIALS is off): these endpoints use no cookies.
"""

import threading
import time
from collections import OrderedDict

from django.conf import settings
from django.db import DatabaseError, transaction

from oauthclients.models import MAX_ORIGIN_LENGTH, ClientOrigin
from plumbing.ratelimit import per_client


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
    if path in (settings.API_ME_PATH, settings.OAUTH_USERINFO_PATH):
        # The project's own bearer API: the token authorizes the call; a page may read the answer
        # from the origin of an approved public client (never with cookies: no credentials).
        try:
            return cors_origin_is_registered(origin=origin, approved_only=True)
        except DatabaseError:
            return False
    configuration = path.startswith(settings.OAUTH_REGISTRATION_PATH + "/")
    if path not in (settings.OAUTH_TOKEN_PATH, settings.OAUTH_REVOKE_PATH) and not configuration:
        return False  # asked for every other request too: decide without the database
    try:
        if request.method == "OPTIONS":
            return cors_origin_is_registered(origin=origin, approved_only=False)
        client_id = path.rpartition("/")[2] if configuration else per_client(request)
        return bool(client_id) and cors_origin_is_clients(origin=origin, client_id=client_id)
    except DatabaseError:
        return False  # the view answers 503 by itself; no CORS grant without the facts


def cors_origins_changed(sender, instance, **kwargs) -> None:
    """post_save of a client: forget this process's CORS answers now, and again once the change is
    committed (a preflight in between may have read the rows as they were). Other processes follow
    within CORS_ORIGIN_CACHE_SECONDS."""
    cors_origin_answers_forget()
    transaction.on_commit(cors_origin_answers_forget)


# The lookups: one origin at a time, never the set of all of them. Open registration
# makes the number of public clients anyone's to choose; a decision must cost the same with none.
CORS_ORIGIN_CACHE_SIZE = 4096  # origins remembered per process (the least recently asked go first)
CORS_ORIGIN_CACHE_SECONDS = 30  # how long another process may answer from before a change
_cors_answers: OrderedDict[tuple[str, bool], tuple[float, bool]] = OrderedDict()
_cors_answers_lock = threading.Lock()
_cors_generation = 0  # bumped by every forget: an answer read before it is not kept after it


def _looks_like_origin(origin) -> bool:
    return isinstance(origin, str) and 0 < len(origin) <= MAX_ORIGIN_LENGTH and "\x00" not in origin


def cors_origin_is_registered(*, origin: str, approved_only: bool) -> bool:
    """Whether a public client users may authorize (with `approved_only`: an approved one) has a
    redirect URI at exactly this web origin.

    One indexed lookup of this origin (ClientOrigin, kept by oauthclients.services), whatever the
    number of clients; the answer, yes or no, is kept in this process for CORS_ORIGIN_CACHE_SECONDS
    among at most CORS_ORIGIN_CACHE_SIZE origins, and forgotten at once in the process that changes
    a client (oauthflows.cors.cors_origins_changed).
    """
    if not _looks_like_origin(origin):
        return False
    key = (origin, approved_only)
    now = time.monotonic()
    with _cors_answers_lock:
        known = _cors_answers.get(key)
        if known is not None and known[0] > now:
            _cors_answers.move_to_end(key)
            return known[1]
        generation = _cors_generation
    rows = ClientOrigin.objects.filter(origin=origin)
    answer = (rows.filter(approved=True) if approved_only else rows).exists()
    with _cors_answers_lock:
        if generation == _cors_generation:
            _cors_answers[key] = (now + CORS_ORIGIN_CACHE_SECONDS, answer)
            _cors_answers.move_to_end(key)
            while len(_cors_answers) > CORS_ORIGIN_CACHE_SIZE:
                _cors_answers.popitem(last=False)
    return answer


def cors_origin_answers_forget() -> None:
    """Drop this process's remembered CORS answers (a client's origins or state changed)."""
    global _cors_generation
    with _cors_answers_lock:
        _cors_generation += 1
        _cors_answers.clear()


def cors_origin_is_clients(*, origin: str, client_id: str) -> bool:
    """Whether this origin is a web origin of a redirect URI of this client, a public client users
    may authorize (approved or unverified): one indexed lookup, not cached (a token request)."""
    if not _looks_like_origin(origin):
        return False
    if not isinstance(client_id, str) or not client_id or len(client_id) > 255 or "\x00" in client_id:
        return False
    return ClientOrigin.objects.filter(origin=origin, client__client_id=client_id).exists()
