"""RFC 9728 protected resource metadata for any service built on `scopes`.

The document names the service (`OAUTH_RESOURCE_URI`), the authorization server that issues its
tokens (`OAUTH_ISSUER`), and exactly the scopes its routes declare (scopes.declarations), so that
an agent that meets a 401 can find where and for what to ask (the MCP authorization flow). Every
401 from a scoped view points here with `resource_metadata` (scopes.authentication).

Mount it in the service's urls.py:

    from scopes.metadata import protected_resource_metadata_urls
    urlpatterns = [..., *protected_resource_metadata_urls()]
"""

from functools import cache
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import Http404, JsonResponse
from django.urls import path
from django.views import View

from scopes.catalog import SCOPES
from scopes.checks import routes
from scopes.declarations import is_public, required_scope, served_methods
from scopes.permissions import is_scoped
from scopes.resource import WELL_KNOWN, resource_uri


@cache
def declared_scopes(urlconf=None) -> tuple[str, ...]:
    """Every scope some routed method of this service requires, in catalog order."""
    needed = set()
    for route, kwarg_names, view in routes(urlconf):
        if not is_scoped(view) or is_public(view):
            continue
        for method in served_methods(view):
            needed.add(required_scope(view, method, route, kwarg_names))
    return tuple(name for name in SCOPES if name in needed)


@receiver(setting_changed)
def _forget(*, setting, **kwargs):
    if setting == "ROOT_URLCONF":
        declared_scopes.cache_clear()


def metadata_document(scopes_supported=None) -> dict:
    """The RFC 9728 document; `scopes_supported` defaults to what the routes declare (a service
    whose operations are not routes, such as an MCP server's tools, names its own)."""
    resource = resource_uri()
    document = {
        "resource": resource,
        "authorization_servers": [settings.OAUTH_ISSUER],
        "scopes_supported": list(declared_scopes() if scopes_supported is None else scopes_supported),
        "bearer_methods_supported": ["header"],  # RFC 6750 §2.1 only (RFC 9700 §4.3.2)
    }
    name = getattr(settings, "OAUTH_RESOURCE_NAME", None)
    if name:
        document["resource_name"] = name
    documentation = getattr(settings, "OAUTH_RESOURCE_DOCUMENTATION", None)
    if documentation:
        document["resource_documentation"] = documentation
    return document


class ProtectedResourceMetadataView(View):
    """GET /.well-known/oauth-protected-resource[/<the resource's path>] (RFC 9728 §3)."""

    http_method_names = ["get", "head", "options"]

    def get(self, request, suffix: str = ""):
        resource = resource_uri()
        if resource is None:
            raise Http404("This service names no OAUTH_RESOURCE_URI.")
        if suffix and "/" + suffix.strip("/") != urlsplit(resource).path.rstrip("/"):
            raise Http404("No protected resource has this path.")
        response = JsonResponse(metadata_document())
        response["Cache-Control"] = "public, max-age=3600"
        # Public metadata: browser-based agents (MCP Inspector) read it from another origin.
        response["Access-Control-Allow-Origin"] = "*"
        return response

    def options(self, request, *args, **kwargs):
        response = super().options(request, *args, **kwargs)
        response["Access-Control-Allow-Origin"] = "*"
        response["Access-Control-Allow-Methods"] = "GET, HEAD, OPTIONS"
        # The MCP SDKs send MCP-Protocol-Version with their discovery requests (MCP Inspector's
        # page does): a preflight that did not allow it would refuse the whole fetch.
        response["Access-Control-Allow-Headers"] = "mcp-protocol-version"
        response["Access-Control-Max-Age"] = "3600"
        return response


def protected_resource_metadata_urls() -> list:
    view = ProtectedResourceMetadataView.as_view()
    return [
        path(WELL_KNOWN.lstrip("/"), view, name="protected_resource_metadata"),
        path(WELL_KNOWN.lstrip("/") + "/<path:suffix>", view, name="protected_resource_metadata_for_path"),
    ]
