"""This service as a protected resource: its resource URI (RFC 8707) and where its RFC 9728
metadata is served (scopes.metadata serves it; scopes.authentication points 401s at it)."""

from urllib.parse import urlsplit

from django.conf import settings

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def resource_uri() -> str | None:
    """`OAUTH_RESOURCE_URI`: the audience this service accepts tokens for; None when unnamed."""
    return getattr(settings, "OAUTH_RESOURCE_URI", None) or None


def metadata_url(resource: str) -> str:
    """RFC 9728 §3.1: the well-known path goes between the host and the resource's own path."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{parts.path.rstrip('/')}"
