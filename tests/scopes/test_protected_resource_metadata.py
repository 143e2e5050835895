"""RFC 9728 protected resource metadata from `scopes` (scopes.metadata), for this server's /v2 API."""

import pytest
from django.test import Client

from scopes.metadata import declared_scopes
from scopes.resource import metadata_url

WELL_KNOWN = "/.well-known/oauth-protected-resource"

pytestmark = pytest.mark.django_db


def test_the_own_api_publishes_its_metadata_at_the_path_suffixed_url(settings):
    assert metadata_url(settings.OAUTH_RESOURCE_URI).endswith(WELL_KNOWN + "/v2")
    response = Client().get(WELL_KNOWN + "/v2")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "resource": settings.OAUTH_RESOURCE_URI,
        "authorization_servers": [settings.OAUTH_ISSUER],
        # Exactly what the routes declare: /v2/me reads and edits the profile.
        "scopes_supported": ["PROFILE_READ", "PROFILE_WRITE"],
        "bearer_methods_supported": ["header"],
        "resource_name": settings.OAUTH_RESOURCE_NAME,
        "resource_documentation": settings.OAUTH_RESOURCE_DOCUMENTATION,
    }
    assert response["Cache-Control"] == "public, max-age=3600"
    assert response["Access-Control-Allow-Origin"] == "*"
    # The root form answers the same document (clients that try it first find it too).
    assert Client().get(WELL_KNOWN).json()["resource"] == settings.OAUTH_RESOURCE_URI


@pytest.mark.parametrize("suffix", ["/v3", "/v2/me", "/other"])
def test_another_path_is_no_protected_resource(suffix):
    assert Client().get(WELL_KNOWN + suffix).status_code == 404


def test_a_service_without_a_resource_uri_has_no_metadata(settings):
    settings.OAUTH_RESOURCE_URI = None
    assert Client().get(WELL_KNOWN).status_code == 404
    # ...and its 401s name none.
    assert "resource_metadata" not in Client().get("/v2/me")["WWW-Authenticate"]


def test_metadata_url_inserts_the_well_known_path_before_the_resource_path():
    assert metadata_url("https://api.example.com") == "https://api.example.com" + WELL_KNOWN
    assert metadata_url("https://api.example.com/") == "https://api.example.com" + WELL_KNOWN
    assert metadata_url("https://api.example.com:8443/mcp") == "https://api.example.com:8443" + WELL_KNOWN + "/mcp"


def test_every_401_points_at_the_metadata(settings):
    expected = f'resource_metadata="{metadata_url(settings.OAUTH_RESOURCE_URI)}"'
    assert expected in Client().get("/v2/me")["WWW-Authenticate"]
    assert expected in Client().get("/v2/me", HTTP_AUTHORIZATION="Bearer nope")["WWW-Authenticate"]


@pytest.mark.urls("tests.scopes.urls_for_tests")
def test_declared_scopes_follow_the_routes():
    declared_scopes.cache_clear()
    try:
        names = declared_scopes()
        assert "BOOKING_READ" in names and "ORG_MEMBERSHIP_WRITE" in names
        assert "EVENT_TYPE_READ" not in names and "ORG_WEBHOOK_READ" not in names  # no route needs them
    finally:
        declared_scopes.cache_clear()


def test_a_browser_mcp_client_may_send_its_protocol_version_header():
    """A page's discovery (MCP Inspector's, the SDKs') sends `MCP-Protocol-Version`: the preflight
    allows it for this public document, and no other header."""
    response = Client().options(
        WELL_KNOWN + "/v2",
        HTTP_ORIGIN="http://localhost:6274",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="mcp-protocol-version",
    )
    assert response["Access-Control-Allow-Origin"] == "*"
    assert response["Access-Control-Allow-Headers"] == "mcp-protocol-version"
