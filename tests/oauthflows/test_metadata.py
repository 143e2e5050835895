"""GET /.well-known/oauth-authorization-server (RFC 8414)."""

from urllib.parse import urlsplit

import pytest
from django.test import Client

from scopes.catalog import SCOPE_NAMES
from tests.oauthflows.helpers import METADATA, assert_tokens, client_post, exchange, get_code, pkce_pair


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
    assert body["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:token-exchange",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ]
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


@pytest.mark.parametrize("endpoint", ["token", "revocation", "introspection"])
def test_none_is_listed_exactly_where_a_public_client_is_authenticated(browser, api, public, endpoint):
    # RFC 8414 §2: the *_auth_methods_supported lists describe what the endpoint really does.
    metadata = api.get(METADATA).json()
    verifier, challenge = pkce_pair()
    tokens = assert_tokens(
        exchange(api, public, get_code(browser, public, code_challenge=challenge), verifier=verifier), "PROFILE_READ"
    )
    path = urlsplit(metadata[f"{endpoint}_endpoint"]).path
    if endpoint == "token":
        data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    else:
        data = {"token": tokens["access_token"]}
    response = client_post(api, path, public, data)
    listed = "none" in metadata[f"{endpoint}_endpoint_auth_methods_supported"]
    assert (response.status_code == 200) is listed, response.content
    assert (response.status_code == 401) is not listed
