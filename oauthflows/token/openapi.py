"""OpenAPI descriptions of the token (RFC 6749), revocation (RFC 7009) and introspection (RFC 7662)
endpoints, applied to the views in oauthflows.token.endpoints. What each says is checked against real
responses in tests/openapi.
"""

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view

from oauthflows.grants import AUTHORIZATION_CODE, CLIENT_PROPERTIES, GRANTS, REFRESH_TOKEN, TOKEN_TYPE
from oauthflows.grants import string_schema as _string
from plumbing.openapi import no_store, ref, www_authenticate

TAGS = ["OAuth 2.0"]
BODY_REQUIRED = {"oauth2_token", "oauth2_revoke", "oauth2_introspect"}  # operation ids
CLIENT_AUTH = [{"clientBasic": []}, {}]  # HTTP Basic, or client_id (and client_secret) in the body
MEDIA_TYPES = ("application/x-www-form-urlencoded", "application/json")

# RFC 6749 §5.2: error_description is printable ASCII without '"' and '\'.
DESCRIPTION_PATTERN = r"^[\x20\x21\x23-\x5B\x5D-\x7E]*$"


def _oauth_error(codes: list[str], description: str) -> dict:
    return {
        "type": "object",
        "description": description,
        "required": ["error", "error_description"],
        "additionalProperties": False,
        "properties": {
            "error": {"type": "string", "enum": codes},
            "error_description": _string("Printable ASCII, for the developer.", pattern=DESCRIPTION_PATTERN),
        },
    }


SCHEMAS = {
    # Each grant's request and answer, as it declares them (oauthflows.grants).
    **{grant.request_schema[0]: grant.openapi_request() for grant in GRANTS},
    **dict(grant.response_schema for grant in GRANTS),
    "TokenRequest": {
        "oneOf": [ref(grant.request_schema[0]) for grant in GRANTS],
        "discriminator": {
            "propertyName": "grant_type",
            "mapping": {grant.grant_type: f"#/components/schemas/{grant.request_schema[0]}" for grant in GRANTS},
        },
    },
    "TokenError": _oauth_error(
        [
            "invalid_request",
            "invalid_grant",
            "unauthorized_client",
            "unsupported_grant_type",
            "invalid_scope",
            "invalid_target",
        ],
        "RFC 6749 §5.2.",
    ),
    "ClientAuthenticationError": _oauth_error(
        ["invalid_client"],
        "Unknown client, wrong or revoked secret, or a client that is not approved: one answer for all.",
    ),
    "TokenParameterError": _oauth_error(["invalid_request"], "RFC 7009 §2.2.1 / RFC 7662 §2.3."),
    "RateLimited": _oauth_error(["invalid_request"], "Too many requests; retry after `Retry-After` seconds."),
    "TokenOperationRequest": {
        "type": "object",
        "required": ["token"],
        "properties": {
            "token": _string("An access or refresh token issued to this client."),
            "token_type_hint": _string(
                "access_token or refresh_token: where to look first. Any other value is ignored and "
                "every token type is searched (RFC 7009 §2.1, RFC 7662 §2.1)."
            ),
            **CLIENT_PROPERTIES,
        },
    },
    "InactiveToken": {
        "type": "object",
        "description": "Unknown, expired, revoked or another client's token, or a public client asking: "
        "nothing more is said.",
        "required": ["active"],
        "additionalProperties": False,
        "properties": {"active": {"type": "boolean", "enum": [False]}},
    },
    "ActiveToken": {
        "type": "object",
        "description": "RFC 7662 §2.2: for a resource server, any live access token; for an app's "
        "confidential client, its own live access or refresh token.",
        "required": [
            "active",
            "scope",
            "client_id",
            "username",
            "sub",
            "exp",
            "iat",
            "iss",
            "token_type",
            "unrestricted",
        ],
        "additionalProperties": False,
        "properties": {
            "active": {"type": "boolean", "enum": [True]},
            "scope": _string("Space-separated; empty for a legacy client's unrestricted token."),
            "client_id": _string("The client the token was issued to."),
            "username": _string("The user's username."),
            "sub": _string("The user's id, as a string."),
            "token_type": {
                "type": "string",
                "enum": ["Bearer", "refresh_token"],
                "description": "`Bearer` for an access token (RFC 6750; compare case-insensitively); "
                "`refresh_token` for a refresh token, which is never a bearer token.",
            },
            "unrestricted": {
                "type": "boolean",
                "description": "True for a legacy client's full-access token (its scope is empty and no scope "
                "restriction applies), false otherwise.",
            },
            "exp": {
                "type": "integer",
                "description": "Expiry, seconds since the epoch (for a refresh token: "
                "its access token's expiry plus the refresh token lifetime).",
            },
            "iat": {"type": "integer", "description": "Issue time, seconds since the epoch."},
            "iss": _string("This server's issuer URL."),
            "aud": {
                "type": "array",
                "items": {"type": "string"},
                "description": "RFC 8707: the resources it is bound to.",
            },
            "act": {
                "type": "object",
                "description": "RFC 8693 §4.1, for a token obtained by exchange: `sub` is the client_id of the "
                "resource server that exchanged (an earlier one nested in `act`).",
            },
        },
    },
    "IntrospectionResponse": {"oneOf": [ref("InactiveToken"), ref("ActiveToken")]},
}


def _request(schema_name: str) -> dict:
    return {media_type: ref(schema_name) for media_type in MEDIA_TYPES}


_UNAUTHORIZED = OpenApiResponse(
    ref("ClientAuthenticationError"),
    description='Client authentication failed. `WWW-Authenticate: Basic realm="oauth"` (never Bearer).',
)
_RATE_LIMITED = OpenApiResponse(ref("RateLimited"), description="Too many requests (`Retry-After` header).")
_CLIENT_AUTH_TEXT = (
    "Client authentication: HTTP Basic (client_secret_basic), client_id and client_secret in the body "
    "(client_secret_post), or client_id alone for a public client. Bodies are "
    "`application/x-www-form-urlencoded` or `application/json` (an object of strings); each parameter "
    "once; credentials never in the query string."
)

token_schema = extend_schema_view(
    post=extend_schema(
        operation_id="oauth2_token",
        summary="Token endpoint: exchange a code, refresh, exchange a token, trade an assertion",
        description="RFC 6749 §3.2. Grants: " + "; ".join(grant.summary for grant in GRANTS) + ". " + _CLIENT_AUTH_TEXT,
        tags=TAGS,
        auth=CLIENT_AUTH,
        request=_request("TokenRequest"),
        parameters=[
            *no_store(200, 400, 401),
            www_authenticate(401, description='`Basic realm="oauth"`: HTTP Basic is the scheme clients may use.'),
        ],
        responses={
            200: OpenApiResponse(
                {"oneOf": [ref(name) for name in dict(grant.response_schema for grant in GRANTS)]},
                description="Tokens issued: each grant's answer.",
            ),
            400: OpenApiResponse(
                ref("TokenError"), description="The request is malformed, or the code or refresh token is not valid."
            ),
            401: _UNAUTHORIZED,
            429: _RATE_LIMITED,
        },
        examples=[
            OpenApiExample(
                "Exchange a code",
                request_only=True,
                value={
                    "grant_type": AUTHORIZATION_CODE.grant_type,
                    "code": "…",
                    "redirect_uri": "https://app.example.com/callback",
                    "client_id": "…",
                    "client_secret": "cs_…",
                },
            ),
            OpenApiExample(
                "Refresh",
                request_only=True,
                value={
                    "grant_type": REFRESH_TOKEN.grant_type,
                    "refresh_token": "…",
                    "client_id": "…",
                    "client_secret": "cs_…",
                },
            ),
            OpenApiExample(
                "Tokens",
                response_only=True,
                status_codes=["200"],
                value={
                    "access_token": "…",
                    "refresh_token": "…",
                    "token_type": TOKEN_TYPE,
                    "expires_in": settings.OAUTH_ACCESS_TOKEN_LIFETIME,
                    "scope": "PROFILE_READ BOOKING_READ",
                },
            ),
        ],
    )
)


def _token_operation(operation_id: str, summary: str, description: str, success: OpenApiResponse):
    """Revocation and introspection: one token parameter, the same client authentication and errors."""
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id,
            summary=summary,
            description=description + " " + _CLIENT_AUTH_TEXT,
            tags=TAGS,
            auth=CLIENT_AUTH,
            request=_request("TokenOperationRequest"),
            parameters=[*no_store(200, 400, 401)],
            responses={
                200: success,
                400: OpenApiResponse(ref("TokenParameterError"), description="The request is malformed."),
                401: _UNAUTHORIZED,
                429: _RATE_LIMITED,
            },
        )
    )


revoke_schema = _token_operation(
    "oauth2_revoke",
    "Revoke a token (RFC 7009)",
    "Revokes one of this client's access or refresh tokens; revoking a refresh token ends the whole "
    "authorization. An unknown or foreign token also answers 200 and nothing happens.",
    OpenApiResponse(None, description="Revoked, or nothing to revoke. The body is empty (no Content-Type)."),
)
introspect_schema = _token_operation(
    "oauth2_introspect",
    "Introspect a token (RFC 7662)",
    "A resource server (a client of kind resource_server) asks about any access token this server issued: "
    "this is how services that serve the API verify bearer tokens. A refresh token is never active for it. "
    "An app's confidential client asks about one of its own tokens. Nothing else may ask about other "
    "clients' tokens; a client without a secret is `invalid_client`.",
    OpenApiResponse(ref("IntrospectionResponse"), description='`{"active": false}` or the token\'s claims.'),
)
