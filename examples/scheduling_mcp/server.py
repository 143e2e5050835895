"""The example MCP server: the official SDK's MCPServer behind `scopes`' bearer-token rules.

The SDK serves the streamable HTTP transport (stateless: no session outlives a request, so no
session can be picked up with another user's token). In front of it, `ScopesBearerAuth` does
what `scopes.authentication` does for a Django service:

- `/.well-known/oauth-protected-resource/mcp` (and the root form): RFC 9728 metadata from
  scopes.metadata, with `scopes_supported` = the tools' scopes only;
- `/mcp` without a token: 401 with `resource_metadata` (RFC 9728 §5.1), which is where an MCP
  client starts its authorization; an invalid, expired, revoked token or one bound to another
  resource (RFC 8707): 401 `invalid_token`; the authorization server unreachable: 503;
- a `tools/call` for a tool whose scope the token lacks (scopes.catalog.grants_scope: an ORG_
  grant implies TEAM_) is answered before the tool runs with HTTP 403 and an `insufficient_scope`
  challenge naming the scopes to ask for (RFC 6750 §3.1, MCP 2025-11-25 "scope challenge
  handling"): the SDKs turn it into a new authorization request (step-up); each tool checks its
  scope again (a tool error) for any path that bypasses the middleware;
- `list_bookings` and `create_booking` call the bookings service (examples/bookings_service) for
  the user. The token this server received is bound to it and is never passed on (MCP security
  best practices, "token passthrough"): it is exchanged (RFC 8693) at the authorization server,
  with this server's own credentials, for one bound to the bookings service with just the scope
  the tool needs, and that one is sent.
"""

import json
from typing import TypedDict
from urllib.parse import urlsplit

import anyio
import requests
from django.conf import settings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.middleware.cors import CORSMiddleware

from scopes.bearer import MalformedBearer, bearer_token
from scopes.catalog import SCOPE_NAMES, grants_scope
from scopes.metadata import metadata_document
from scopes.resource import WELL_KNOWN, metadata_url, resource_uri
from scopes.verifiers import AuthorizationServerUnavailable, Verification, audience_accepted, get_verifier

MCP_PATH = "/mcp"
STATE_KEY = "scopes_verification"
RAW_TOKEN_KEY = "scopes_raw_token"  # kept in the request's state only, to be exchanged, never sent on
# The scope each tool needs: the whole of what this server asks agents for.
TOOL_SCOPES = {"whoami": "PROFILE_READ", "list_bookings": "BOOKING_READ", "create_booking": "BOOKING_WRITE"}
# What an agent asks for first (the 401's `scope`, MCP 2025-11-25 scope selection): the read
# tools, within the unverified tier's ceiling. The write tool's scope is asked for when needed
# (step-up); the metadata's scopes_supported lists every tool's.
FIRST_SCOPES = ("PROFILE_READ", "BOOKING_READ")
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
TIMEOUT = 5
MAX_BODY_BYTES = 1024 * 1024  # what the middleware reads to find the tool called; more is a 413

mcp = MCPServer(
    "Scheduling",
    instructions="Tools over the user's scheduling account: who they are, and their bookings.",
)


def _verification(ctx: Context) -> Verification:
    request = ctx.request_context.request
    verification = (getattr(request, "scope", None) or {}).get("state", {}).get(STATE_KEY)
    if verification is None:  # only reachable if the app is served without ScopesBearerAuth
        raise ToolError("No verified access token.")
    return verification


def _granted(ctx: Context, tool: str) -> Verification:
    verification = _verification(ctx)
    needed = TOOL_SCOPES[tool]
    token = verification.token
    if not token.unrestricted and not grants_scope(token.scopes, needed):
        raise ToolError(
            f"{tool} needs the {needed} scope; this token grants {', '.join(token.scopes) or 'none'}. "
            "Authorize again asking for it."
        )
    return verification


class Identity(TypedDict):
    username: str
    sub: str
    client_id: str
    scopes: list[str]


class Bookings(TypedDict):
    username: str
    bookings: list[dict]


@mcp.tool()
def whoami(ctx: Context) -> Identity:
    """The user this agent acts for: username, stable subject and the scopes granted."""
    verification = _granted(ctx, "whoami")
    return {
        "username": verification.user.get_username(),
        "sub": verification.token.subject,
        "client_id": verification.token.client_id,
        "scopes": list(verification.token.scopes),
    }


class Booked(TypedDict):
    username: str
    booking: dict


def _exchanged(ctx: Context, scope: str) -> str:
    """RFC 8693: the received token traded for one bound to the bookings service, with `scope` only."""
    raw = (getattr(ctx.request_context.request, "scope", None) or {}).get("state", {}).get(RAW_TOKEN_KEY)
    try:
        response = requests.post(
            settings.OAUTH_TOKEN_URL,
            data={
                "grant_type": TOKEN_EXCHANGE,
                "subject_token": raw,
                "subject_token_type": ACCESS_TOKEN_TYPE,
                "requested_token_type": ACCESS_TOKEN_TYPE,
                "resource": settings.OAUTH_BOOKINGS_RESOURCE,
                "scope": scope,
            },
            auth=(settings.OAUTH_RESOURCE_SERVER_ID, settings.OAUTH_RESOURCE_SERVER_SECRET),
            timeout=TIMEOUT,
            allow_redirects=False,
        )
    except requests.RequestException as exc:
        raise ToolError(f"The authorization server could not be reached ({type(exc).__name__}).") from None
    if response.status_code != 200:
        error = _json_or_empty(response).get("error", f"HTTP {response.status_code}")
        raise ToolError(f"The authorization server refused the token exchange for the bookings service: {error}.")
    return response.json()["access_token"]


def _json_or_empty(response) -> dict:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _bookings_call(method: str, token: str, body: dict | None = None) -> dict:
    try:
        response = requests.request(
            method,
            settings.OAUTH_BOOKINGS_URL,
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=TIMEOUT,
            allow_redirects=False,
        )
    except requests.RequestException as exc:
        raise ToolError(f"The bookings service could not be reached ({type(exc).__name__}).") from None
    if response.status_code not in (200, 201):
        raise ToolError(f"The bookings service answered HTTP {response.status_code}.")
    return _json_or_empty(response)


@mcp.tool()
async def list_bookings(ctx: Context) -> Bookings:
    """The user's bookings, from the bookings service (called with an exchanged token)."""
    verification = _granted(ctx, "list_bookings")
    token = await anyio.to_thread.run_sync(_exchanged, ctx, "BOOKING_READ")
    answer = await anyio.to_thread.run_sync(_bookings_call, "GET", token)
    return {"username": verification.user.get_username(), "bookings": list(answer.get("data") or [])}


@mcp.tool()
async def create_booking(ctx: Context, title: str, start: str | None = None) -> Booked:
    """Book `title` for the user (30 minutes; `start` in ISO 8601, default a week from now)."""
    verification = _granted(ctx, "create_booking")
    token = await anyio.to_thread.run_sync(_exchanged, ctx, "BOOKING_WRITE")
    body = {"title": title} | ({"start": start} if start else {})
    answer = await anyio.to_thread.run_sync(_bookings_call, "POST", token, body)
    return {"username": verification.user.get_username(), "booking": dict(answer.get("data") or {})}


def tool_scopes() -> list[str]:
    """The scopes the tools need, in catalog order: the metadata's `scopes_supported`."""
    needed = set(TOOL_SCOPES.values())
    return [name for name in SCOPE_NAMES if name in needed]


async def _send_json(send, status: int, body: dict, headers: list[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _challenge(error: str | None, scopes=FIRST_SCOPES) -> bytes:
    challenge = 'Bearer realm="mcp"'
    if error:
        challenge += f', error="{error}"'
    challenge += f', scope="{" ".join(scopes)}"'  # RFC 6750 §3
    return (challenge + f', resource_metadata="{metadata_url(resource_uri())}"').encode()


def _called_tools(body: bytes) -> list[str]:
    """The tools a JSON-RPC request (or a batch of them) calls: `tools/call`'s `params.name`."""
    try:
        message = json.loads(body)
    except ValueError:
        return []  # the SDK answers a parse error itself
    messages = message if isinstance(message, list) else [message]
    names = []
    for item in messages:
        if isinstance(item, dict) and item.get("method") == "tools/call" and isinstance(item.get("params"), dict):
            name = item["params"].get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def missing_scopes(verification: Verification, tools: list[str]) -> list[str]:
    """The scopes the token lacks for these tools (none for an unrestricted token or unknown tools)."""
    token = verification.token
    if token.unrestricted:
        return []
    needed = {TOOL_SCOPES[name] for name in tools if name in TOOL_SCOPES}
    return sorted(name for name in needed if not grants_scope(token.scopes, name))


def step_up_scopes(verification: Verification, missing: list[str]) -> list[str]:
    """The 403's `scope`: what the token has (so that re-authorizing loses nothing, whatever the
    client does with it) and what the tool needs, in catalog order."""
    wanted = set(verification.token.scopes) | set(missing)
    return [name for name in SCOPE_NAMES if name in wanted]


async def _read_body(receive) -> tuple[bytes, list[dict]] | None:
    """The request body, and the messages that carried it (to be replayed); None beyond MAX_BODY_BYTES."""
    chunks, messages, size = [], [], 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_BODY_BYTES:
            return None
        if not message.get("more_body", False):
            break
    return b"".join(chunks), messages


def _replaying(messages: list[dict], receive):
    pending = list(messages)

    async def replay():
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


class ScopesBearerAuth:
    """ASGI middleware: RFC 9728 metadata, and RFC 6750 bearer verification through `scopes`."""

    def __init__(self, app):
        self.app = app
        # RFC 9728 §3.1's path-suffixed URL (scopes.resource.metadata_url), and the root form.
        self.metadata_paths = {WELL_KNOWN, urlsplit(metadata_url(resource_uri())).path}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan: the SDK's session manager
            return
        path = scope["path"]
        if path in self.metadata_paths and scope["method"] in ("GET", "HEAD"):
            await _send_json(
                send,
                200,
                metadata_document(scopes_supported=tool_scopes()),
                [(b"cache-control", b"public, max-age=3600")],
            )
            return
        if path.rstrip("/") != MCP_PATH or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        refusal = await self._refusal(scope)
        if refusal is None and scope["method"] == "POST":
            read = await _read_body(receive)
            if read is None:
                refusal = 413, {"error": "invalid_request", "error_description": "The request is too large."}, []
            else:
                body, messages = read
                receive = _replaying(messages, receive)
                refusal = self._scope_refusal(scope["state"][STATE_KEY], _called_tools(body))
        if refusal is not None:
            status, body, headers = refusal
            await _send_json(send, status, body, headers)
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _scope_refusal(verification: Verification, tools: list[str]):
        """RFC 6750 §3.1 insufficient_scope for a tool call the token does not cover, or None."""
        missing = missing_scopes(verification, tools)
        if not missing:
            return None
        body = {
            "error": "insufficient_scope",
            "error_description": f"This tool needs the {', '.join(missing)} scope: authorize again asking for it.",
        }
        challenge = _challenge("insufficient_scope", step_up_scopes(verification, missing))
        return 403, body, [(b"www-authenticate", challenge)]

    async def _refusal(self, scope):
        """(status, body, headers) refusing the request, or None (the verification is in scope["state"])."""
        header = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
        try:
            raw = bearer_token(header)
        except MalformedBearer:
            raw = ""  # the Bearer scheme without a token of a form ever issued: an invalid token
        if raw is None:
            # RFC 6750 §3.1: no credentials, no error code; the client starts authorization here.
            body = {"error": "unauthorized", "error_description": "This MCP server needs an OAuth access token."}
            return 401, body, [(b"www-authenticate", _challenge(None))]
        try:
            verification = await anyio.to_thread.run_sync(get_verifier().verify, raw) if raw else None
        except AuthorizationServerUnavailable as exc:
            body = {"error": "temporarily_unavailable", "error_description": str(exc.detail)}
            return 503, body, [(b"retry-after", str(exc.retry_after).encode())]
        if verification is None or not audience_accepted(verification.token.audience):
            description = (
                "The access token is invalid, expired or revoked."
                if verification is None
                else "The access token is not meant for this MCP server: request one with resource="
                + resource_uri()
                + " (RFC 8707)."
            )
            body = {"error": "invalid_token", "error_description": description}
            return 401, body, [(b"www-authenticate", _challenge("invalid_token"))]
        scope.setdefault("state", {})[STATE_KEY] = verification
        scope["state"][RAW_TOKEN_KEY] = raw
        return None


def application(host: str = "127.0.0.1"):
    """The ASGI application: CORS for browser-based agents (no cookies: the bearer header is the
    credential), the bearer rules, then the SDK's streamable HTTP transport at /mcp."""
    # `host` sets the SDK's DNS-rebinding protection: on loopback, only loopback Host headers.
    app = mcp.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, host=host)
    return CORSMiddleware(
        ScopesBearerAuth(app),
        allow_origins=["*"],
        allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
        allow_headers=["authorization", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"],
        expose_headers=["www-authenticate", "mcp-session-id"],
    )
