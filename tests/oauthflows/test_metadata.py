"""GET /.well-known/oauth-authorization-server (RFC 8414)."""

from django.test import Client

from scopes.catalog import SCOPE_NAMES


def test_metadata_describes_this_server(db):
    response = Client().get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    body = response.json()
    issuer = "http://testserver"
    assert body["issuer"] == issuer
    assert body["authorization_endpoint"] == issuer + "/auth/oauth2/authorize"
    assert body["token_endpoint"] == issuer + "/v2/auth/oauth2/token"
    assert body["revocation_endpoint"] == issuer + "/v2/auth/oauth2/revoke"
    assert body["introspection_endpoint"] == issuer + "/v2/auth/oauth2/introspect"
    assert body["scopes_supported"] == list(SCOPE_NAMES) and len(SCOPE_NAMES) == 46
    assert body["response_types_supported"] == ["code"]
    assert body["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert body["code_challenge_methods_supported"] == ["S256"]
    assert set(body["token_endpoint_auth_methods_supported"]) == {"client_secret_basic", "client_secret_post", "none"}
    assert body["authorization_response_iss_parameter_supported"] is True


def test_the_advertised_endpoints_exist(db):
    body = Client().get("/.well-known/oauth-authorization-server").json()
    api = Client()
    for key in ("token_endpoint", "revocation_endpoint", "introspection_endpoint"):
        path = body[key].removeprefix("http://testserver")
        assert api.post(path, data="", content_type="application/x-www-form-urlencoded").status_code == 400, key


def test_the_issuer_follows_oauth_issuer(db, settings):
    settings.OAUTH_ISSUER = "https://auth.example.com"
    body = Client().get("/.well-known/oauth-authorization-server").json()
    assert body["issuer"] == "https://auth.example.com"
    assert body["token_endpoint"] == "https://auth.example.com/v2/auth/oauth2/token"


def test_post_is_not_allowed(db):
    assert Client().post("/.well-known/oauth-authorization-server").status_code == 405
