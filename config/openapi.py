"""The project's OpenAPI document: the schema hook that merges every app's components, and the docs
pages (/v2/schema/, /v2/docs/). The shared helpers live in plumbing/openapi.py, the OAuth schemas
in oauthflows/token/openapi.py.
"""

from django.http import HttpResponse
from django.templatetags.static import static
from django.utils.html import format_html
from django.views import View
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView

from oauthflows.token.openapi import BODY_REQUIRED
from oauthflows.token.openapi import SCHEMAS as OAUTH_SCHEMAS
from plumbing.openapi import SCHEMAS, SECURITY_SCHEMES

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


def add_components(result, generator, request, public):
    """POSTPROCESSING_HOOKS entry: the hand-written components and security schemes, and the
    request bodies that are required (drf-spectacular cannot tell for a hand-written schema)."""
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
