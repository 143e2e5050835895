"""Each grant of the token endpoint, declared once: what it is called, what it keeps on the request,
what it checks before oauthlib sees it, which oauthlib grant serves it, what it answers, and how the
OpenAPI document describes its request and its answer.

Everything that lists the grants reads `GRANTS`: the token endpoint (which grant types it takes, the
parameters it accepts, the checks it runs: oauthflows.token.endpoints), oauthlib's server (the
grant objects it dispatches to: oauthflows.token.oauth2.Server), the server metadata's
`grant_types_supported` (oauthflows.discovery.metadata), RFC 7591 registration's `grant_types`
(oauthflows.registration.dynamic), the OpenAPI document (oauthflows.token.openapi) and the metrics'
labels (operations.access). `tests/oauthflows/test_one_grant_declaration.py` fails on a grant listed
by hand anywhere else.

Every grant then issues the same way: its validation puts its typed state on oauthlib's request
(`grant_state`, one of the `GrantState` classes below, never an attribute of its own), the token
generator and the save read it from there, the one writer stores the rows
(tokens/services.py:access_token_issue), and `token_response` builds the one answer, whose
`token_type` is `bearer` from every grant (docs/choices.md, "token_type").

The lowest room of oauthflows: it imports none of the others, so that each may read it (registration,
below the token room, included).
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from django.conf import settings

from accounts.models import IdentityProvider
from oauthclients.models import Grant, RefreshToken
from scopes.catalog import SCOPE_NAMES
from tokens.services import Lineage

# RFC 6749 §5.1 and §7.1 (the token type, compared case-insensitively by clients); the spec's
# "Value is bearer" (shared/spec/oauth-spec.md), from every grant (docs/choices.md).
TOKEN_TYPE = "bearer"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"  # RFC 8693 §3


# --- the typed state a grant keeps on oauthlib's request ----------------------------------------


@dataclass(kw_only=True)
class GrantState:
    """What a grant's validation decided about the token it issues, on oauthlib's Request as
    `grant_state` (read through `grant_state`, below, by its type): the token generator
    (oauthflows.token.oauth2.generate_access_token) and the grant's save read it."""

    # A JWT access token's place in a status list (signing.statuslist), set by the generator.
    jwt_status: tuple[int, int] | None = None

    def login_time(self) -> datetime | None:
        """When the user logged in for this grant (a JWT's `auth_time`), if recorded."""
        return None


@dataclass(kw_only=True)
class CodeState(GrantState):
    """authorization_code: the code's grant row (loaded or claimed, locked) and the new family."""

    grant: Grant | None = None
    family: uuid.UUID | None = None

    def login_time(self):
        return getattr(self.grant, "auth_time", None)


@dataclass(kw_only=True)
class RefreshState(GrantState):
    """refresh_token: the presented refresh token (claimed, or locked for the request)."""

    presented: RefreshToken

    def login_time(self):
        return self.presented.auth_time


@dataclass(kw_only=True)
class SingleTokenState(GrantState):
    """A grant that issues one access token and no refresh token: its lifetime, its lineage (what
    ends it, tokens.services), the login time it carries and, for an exchanged one, `act`."""

    lifetime: int
    lineage: Lineage
    auth_time: datetime | None
    act: dict | None = None

    def login_time(self):
        return self.auth_time


@dataclass(kw_only=True)
class ExchangeState(SingleTokenState):
    """RFC 8693 token exchange (oauthflows.token.exchange): `act` names the exchanging caller."""


@dataclass(kw_only=True)
class AssertionState(SingleTokenState):
    """RFC 7523 with an ID-JAG (oauthflows.token.idjag): the organization's provider that granted it."""

    provider: IdentityProvider


State = TypeVar("State", bound=GrantState)


def grant_state(request, kind: type[State]) -> State | None:
    """The request's grant state if it is a `kind`, else None: a grant never reads another's."""
    state = getattr(request, "grant_state", None)
    return state if isinstance(state, kind) else None


# --- what the OpenAPI document says of each grant -----------------------------------------------


def string_schema(description: str, **extra) -> dict:
    return {"type": "string", "description": description, **extra}


CLIENT_PROPERTIES = {
    "client_id": string_schema("Required unless the client authenticates with HTTP Basic."),
    "client_secret": string_schema("client_secret_post. Never together with HTTP Basic."),
}
SCOPE_LIST = (
    "Space-separated scope names (" + ", ".join(f"`{name}`" for name in SCOPE_NAMES[:3]) + ", …; "
    "see the metadata document's `scopes_supported`)."
)
RESOURCE = string_schema(
    "RFC 8707: narrow the new token's audience to this resource URI, within the authorization's (may repeat)."
)
TOKEN_TYPE_SCHEMA = {
    "type": "string",
    "enum": [TOKEN_TYPE],
    "description": "RFC 6749 §5.1; compare case-insensitively.",
}


def _lifetime_schema(description: str, **bounds) -> dict:
    return {"type": "integer", "description": description, **bounds}


TOKEN_RESPONSE = {
    "type": "object",
    "description": "RFC 6749 §5.1. Exactly these members (`id_token` only when `openid` was granted).",
    "required": ["access_token", "refresh_token", "token_type", "expires_in", "scope"],
    "additionalProperties": False,
    "properties": {
        "access_token": string_schema("Send as `Authorization: Bearer <access_token>` to /v2."),
        "refresh_token": string_schema("Single use: every refresh returns a new one."),
        "token_type": TOKEN_TYPE_SCHEMA,
        "expires_in": _lifetime_schema("Seconds the access token lives.", enum=[settings.OAUTH_ACCESS_TOKEN_LIFETIME]),
        "scope": string_schema("The granted scopes, space-separated; empty for a legacy client's unrestricted token."),
        "id_token": string_schema("OpenID Connect Core §3.1.3.3: with `openid` granted, at the code exchange."),
    },
}
EXCHANGED_TOKEN_RESPONSE = {
    "type": "object",
    "description": "RFC 8693 §2.2.1. Exactly these members: no refresh token.",
    "required": ["access_token", "issued_token_type", "token_type", "expires_in", "scope"],
    "additionalProperties": False,
    "properties": {
        "access_token": string_schema("Bound to the downstream resource server only."),
        "issued_token_type": {"type": "string", "enum": [ACCESS_TOKEN_TYPE]},
        "token_type": TOKEN_TYPE_SCHEMA,
        "expires_in": _lifetime_schema(
            "Seconds: never more than the subject token had left.",
            minimum=1,
            maximum=settings.OAUTH_ACCESS_TOKEN_LIFETIME,
        ),
        "scope": string_schema("The scopes of the new token, space-separated."),
    },
}
ASSERTED_TOKEN_RESPONSE = {
    "type": "object",
    "description": "RFC 7523 §2.1 with an ID-JAG. Exactly these members: no refresh token (a new assertion is "
    "the way to continue, so that the organization stays in charge).",
    "required": ["access_token", "token_type", "expires_in", "scope"],
    "additionalProperties": False,
    "properties": {
        "access_token": string_schema("Bound to the resource the assertion names."),
        "token_type": TOKEN_TYPE_SCHEMA,
        "expires_in": _lifetime_schema("Seconds the access token lives.", enum=[settings.OAUTH_ACCESS_TOKEN_LIFETIME]),
        "scope": string_schema("The granted scopes, space-separated."),
    },
}


# --- the declaration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GrantType:
    """One grant of the token endpoint, as everything that lists grants reads it."""

    grant_type: str  # the `grant_type` value
    state: type[GrantState]  # what its validation keeps on oauthlib's request
    # oauthlib's grant object: the dotted path of our own GrantTypeBase subclass, or the attribute of
    # oauthlib's OpenID Server that holds its own (oauthflows.token.oauth2.Server).
    handler: str
    # Its OpenAPI request component: name, schema (grant_type added by `openapi_request`).
    request_schema: tuple[str, dict]
    response_schema: tuple[str, dict]  # its OpenAPI answer component: name, schema
    summary: str  # one line for the OpenAPI operation's description
    issues_refresh_token: bool = False
    issued_token_type: str | None = None  # RFC 8693 §2.2.1 `issued_token_type` in its answer
    # The one grant a resource server may use (RFC 8693): the others are unauthorized_client for it.
    resource_servers_allowed: bool = False
    # RFC 7591: a client may name it in its registration's grant_types.
    registrable: bool = False
    # A check of the parameters before oauthlib sees them: (error, description), or None.
    check: Callable[[dict], tuple[str, str] | None] | None = None

    @property
    def parameters(self) -> frozenset[str]:
        """The parameters its request takes (its request schema's, and grant_type)."""
        return frozenset(self.openapi_request()["properties"])

    def openapi_request(self) -> dict:
        """Its request's schema, `grant_type` first."""
        schema = self.request_schema[1]
        return schema | {
            "required": ["grant_type", *schema["required"]],
            "properties": {"grant_type": {"type": "string", "enum": [self.grant_type]}, **schema["properties"]},
        }


def _redirect_uri_required(params: dict) -> tuple[str, str] | None:
    if not params.get("redirect_uri"):
        # RFC 6749 §4.1.3: required because the authorization request always carries one.
        return "invalid_request", "The redirect_uri parameter is required and must equal the authorization request's."
    return None


AUTHORIZATION_CODE = GrantType(
    grant_type="authorization_code",
    state=CodeState,
    # Every code exchange goes to oauthlib's OpenID grant, which adds nothing without `openid`.
    handler="openid_connect_auth",
    request_schema=(
        "AuthorizationCodeTokenRequest",
        {
            "type": "object",
            "description": "Exchange an authorization code (RFC 6749 §4.1.3, PKCE RFC 7636 §4.5).",
            "required": ["code", "redirect_uri"],
            "properties": {
                "code": string_schema(
                    "The code from the authorization response. Single use; lives 60 seconds by default."
                ),
                "redirect_uri": string_schema("Exactly the redirect_uri of the authorization request."),
                "code_verifier": string_schema(
                    "PKCE verifier: required if the authorization request carried a code_challenge "
                    "(always, for public clients), refused otherwise.",
                    minLength=43,
                    maxLength=128,
                    pattern=r"^[A-Za-z0-9\-._~]{43,128}$",
                ),
                "resource": RESOURCE,
                **CLIENT_PROPERTIES,
            },
        },
    ),
    response_schema=("TokenResponse", TOKEN_RESPONSE),
    summary="`authorization_code` (with PKCE)",
    issues_refresh_token=True,
    registrable=True,
    check=_redirect_uri_required,
)
REFRESH_TOKEN = GrantType(
    grant_type="refresh_token",
    state=RefreshState,
    handler="refresh_grant",
    request_schema=(
        "RefreshTokenRequest",
        {
            "type": "object",
            "description": "Refresh (RFC 6749 §6). The refresh token is rotated: the response carries a new one "
            "and the old one, with its access token, stops working.",
            "required": ["refresh_token"],
            "properties": {
                "refresh_token": string_schema("The latest refresh token of this authorization."),
                "scope": string_schema("Optional narrowing; at most the scopes originally granted. " + SCOPE_LIST),
                "resource": RESOURCE,
                **CLIENT_PROPERTIES,
            },
        },
    ),
    response_schema=("TokenResponse", TOKEN_RESPONSE),
    summary="`refresh_token` (rotated)",
    issues_refresh_token=True,
    registrable=True,
)
TOKEN_EXCHANGE = GrantType(
    grant_type="urn:ietf:params:oauth:grant-type:token-exchange",
    state=ExchangeState,
    handler="oauthflows.token.exchange.TokenExchangeGrant",
    request_schema=(
        "TokenExchangeRequest",
        {
            "type": "object",
            "description": "RFC 8693 token exchange, for a resource server calling another one for a user "
            "(docs/agents.md): the access token it received, for one bound to the downstream service that an "
            "administrator allowed it. No refresh token.",
            "required": ["subject_token", "subject_token_type", "resource"],
            "properties": {
                "subject_token": string_schema("An access token bound to the calling resource server."),
                "subject_token_type": {"type": "string", "enum": [ACCESS_TOKEN_TYPE]},
                "requested_token_type": {"type": "string", "enum": [ACCESS_TOKEN_TYPE]},
                "resource": string_schema("The downstream resource server's resource URI (or send it as `audience`)."),
                "audience": string_schema("The same as `resource`."),
                "scope": string_schema("Optional narrowing; at most the subject token's scopes. " + SCOPE_LIST),
                **CLIENT_PROPERTIES,
            },
        },
    ),
    response_schema=("ExchangedTokenResponse", EXCHANGED_TOKEN_RESPONSE),
    summary="RFC 8693 token exchange, for resource servers",
    issued_token_type=ACCESS_TOKEN_TYPE,
    resource_servers_allowed=True,
)
JWT_BEARER = GrantType(
    grant_type="urn:ietf:params:oauth:grant-type:jwt-bearer",
    state=AssertionState,
    handler="oauthflows.token.idjag.JwtBearerGrant",
    request_schema=(
        "JwtBearerTokenRequest",
        {
            "type": "object",
            "description": "RFC 7523 §2.1 with an Identity Assertion JWT Authorization Grant (ID-JAG): an "
            "organization's identity provider says one of its people may use this client toward a resource "
            "server (docs/agents.md). No consent page, no refresh token.",
            "required": ["assertion"],
            "properties": {
                "assertion": string_schema(
                    "The ID-JAG: a JWT of `typ` `oauth-id-jag+jwt` signed by the organization's provider.",
                    maxLength=16 * 1024,
                ),
                "scope": string_schema("Optional narrowing; at most the assertion's scopes. " + SCOPE_LIST),
                "resource": string_schema("Optional: the resource URI the assertion names."),
                **CLIENT_PROPERTIES,
            },
        },
    ),
    response_schema=("AssertedTokenResponse", ASSERTED_TOKEN_RESPONSE),
    summary="RFC 7523 JWT bearer with an ID-JAG, for organizations' providers",
)

# Every grant the token endpoint takes, in the order the metadata lists them.
GRANTS: tuple[GrantType, ...] = (AUTHORIZATION_CODE, REFRESH_TOKEN, TOKEN_EXCHANGE, JWT_BEARER)
GRANTS_BY_TYPE: dict[str, GrantType] = {grant.grant_type: grant for grant in GRANTS}
GRANT_TYPES: tuple[str, ...] = tuple(GRANTS_BY_TYPE)


def grant_types_text(grants=GRANTS) -> str:
    """'a, b, c or d': the grant types, for a sentence."""
    names = [grant.grant_type for grant in grants]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


# --- the one answer -------------------------------------------------------------------------------


def token_response(grant: GrantType, data: dict) -> dict:
    """The token endpoint's answer for `grant`, from what its oauthlib grant produced: RFC 6749 §5.1
    (`token_type` TOKEN_TYPE whatever oauthlib said), RFC 8693 §2.2.1 for an exchanged token, a
    refresh token only from a grant that issues one, an ID token when `openid` was granted."""
    answer = {"access_token": data["access_token"]}
    if grant.issued_token_type:
        answer["issued_token_type"] = grant.issued_token_type
    if grant.issues_refresh_token and data.get("refresh_token"):
        answer["refresh_token"] = data["refresh_token"]
    answer |= {
        "token_type": TOKEN_TYPE,
        "expires_in": int(data.get("expires_in", settings.OAUTH_ACCESS_TOKEN_LIFETIME)),
        "scope": data.get("scope", "") or "",
    }
    if data.get("id_token"):
        # OpenID Connect Core §3.1.3.3: with `openid` granted, the ID token (oauthflows.token.oauth2).
        answer["id_token"] = data["id_token"]
    return answer
