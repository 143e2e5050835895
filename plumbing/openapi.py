"""OpenAPI 3 helpers (drf-spectacular) shared by the apps: shared components, security schemes and
response helpers. Component schemas are plain JSON Schema written here rather than derived, so they
can say exactly what the endpoints answer (enums, required keys, no extra keys); tests/openapi
checks them against real responses. The schema hook and the docs views are the project's
(config/openapi.py).
"""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


API_ERROR_CODES = {
    400: "`validation_error` (with `details` per field), `parse_error` or `bad_request`",
    401: "`unauthorized` (no token) or `invalid_token`",
    403: "`insufficient_scope`",
    413: "`request_too_large`",
    415: "`unsupported_media_type`",
    503: "`service_unavailable`",
}

API_ERROR_DESCRIPTIONS = {
    400: "The body is not valid JSON, or a field is invalid.",
    401: "No bearer token, or an invalid, expired or revoked one.",
    503: "The access token could not be verified: the authorization server is unavailable (a resource server "
    "verifying by introspection). Retry after the `Retry-After` seconds.",
    403: "The token's scopes do not include the one this method needs "
    '(`WWW-Authenticate: Bearer realm="api", error="insufficient_scope", scope="…"`, naming the required '
    "and the granted scopes).",
    413: "The request body is larger than the server accepts.",
    415: "The request body is not `application/json`.",
}

SCHEMAS = {
    "ApiError": {
        "type": "object",
        "description": "Every /v2 error.",
        "required": ["status", "error"],
        "additionalProperties": False,
        "properties": {
            "status": {"type": "string", "enum": ["error"]},
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "additionalProperties": False,
                "properties": {
                    "code": {"type": "string", "description": "Machine-readable; see each response."},
                    "message": {"type": "string", "description": "Human-readable, English."},
                    "details": {
                        "description": "validation_error only: the messages per field (an object), "
                        "or a list of messages for the body as a whole.",
                        "oneOf": [
                            {"type": "object", "additionalProperties": True},
                            {"type": "array", "items": {"type": "string"}},
                        ],
                    },
                },
            },
        },
    },
}

SECURITY_SCHEMES = {
    "clientBasic": {
        "type": "http",
        "scheme": "basic",
        "description": "client_secret_basic (RFC 6749 §2.3.1): client_id and client_secret, each "
        "form-urlencoded, as HTTP Basic user and password. Alternatively send client_id and "
        "client_secret in the body (client_secret_post), or client_id alone for a public client — never both "
        "Basic and a body secret.",
    },
}


def api_errors(*codes: int) -> dict:
    """`responses` entries for /v2 errors in the {"status": "error", "error": {...}} shape."""
    return {
        code: OpenApiResponse(
            ref("ApiError"), description=f"{API_ERROR_DESCRIPTIONS[code]} `error.code`: {API_ERROR_CODES[code]}."
        )
        for code in codes
    }


def _response_header(name: str, codes, **extra) -> OpenApiParameter:
    return OpenApiParameter(name, str, location=OpenApiParameter.HEADER, response=list(codes), required=True, **extra)


def www_authenticate(*codes: int, description: str) -> OpenApiParameter:
    return _response_header("WWW-Authenticate", codes, description=description)


def no_store(*codes: int) -> list[OpenApiParameter]:
    """Cache-Control: no-store and Pragma: no-cache on the token endpoints' answers (RFC 6749 §5.1)."""
    return [
        _response_header("Cache-Control", codes, enum=["no-store"]),
        _response_header("Pragma", codes, enum=["no-cache"]),
    ]
