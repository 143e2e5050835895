"""OpenAPI 3 schema (drf-spectacular): shared components, security schemes and response helpers.

The schema is served at /v2/schema/ (docs at /v2/docs/). Component schemas are plain JSON Schema
written here rather than derived, so they can say exactly what the endpoints answer (enums,
required keys, no extra keys); tests/openapi checks them against real responses.
"""

from django.http import HttpResponse
from django.templatetags.static import static
from django.utils.html import format_html
from django.views import View
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView

# Swagger UI's page has an inline <style> and its bundle sets inline styles and data: images; its
# script comes from our static files and from this view (the split view: no inline script).
DOCS_CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    ]
)


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


def add_components(result, generator, request, public):
    """POSTPROCESSING_HOOKS entry: the hand-written components and security schemes, and the
    request bodies that are required (drf-spectacular cannot tell for a hand-written schema)."""
    from oauthflows.openapi import BODY_REQUIRED
    from oauthflows.openapi import SCHEMAS as OAUTH_SCHEMAS

    components = result.setdefault("components", {})
    components.setdefault("schemas", {}).update({**SCHEMAS, **OAUTH_SCHEMAS})
    components.setdefault("securitySchemes", {}).update(SECURITY_SCHEMES)
    # An account may have no email address: /v2/me then says "", which `format: email` would refuse.
    email = components["schemas"].get("Profile", {}).get("properties", {}).get("email")
    if email is not None:
        email.pop("format", None)
        email["description"] = "The account's email address; empty if it has none."
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if operation.get("operationId") in BODY_REQUIRED and "requestBody" in operation:
                operation["requestBody"]["required"] = True
    return result


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


class SwaggerView(SpectacularSwaggerSplitView):
    """GET /v2/docs/: Swagger UI on /v2/schema/, its assets from drf-spectacular-sidecar (no CDN)."""

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = DOCS_CONTENT_SECURITY_POLICY
        return response


class SwaggerOAuthRedirectView(View):
    """GET /v2/docs/oauth2-redirect.html: where Swagger UI's authorization popup lands with the code.

    Swagger UI's own page, served here rather than redirected to the static file: the code then
    makes no extra hop, and the page gets the same headers as the docs page (the same
    Cross-Origin-Opener-Policy keeps the popup's link to its opener, through which the page hands
    the code back). Its script comes from our static files.
    """

    def get(self, request, *args, **kwargs):
        script = static("drf_spectacular_sidecar/swagger-ui-dist/oauth2-redirect.js")
        page = format_html(
            '<!doctype html><html lang="en-US"><head><title>Authorized</title></head>'
            '<body><script src="{}"></script></body></html>',
            script,
        )
        response = HttpResponse(page)
        response["Cache-Control"] = "no-store"  # the URL carries the authorization code
        return response
