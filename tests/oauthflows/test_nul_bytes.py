"""No parameter reaches a 500 on PostgreSQL (SECURITY.md: NUL bytes included), nor on SQLite: a NUL
in any parameter of the token, revocation and introspection endpoints, or in HTTP Basic
credentials, is the RFC 6749 §5.2 answer (house issue, "two client-triggerable 500s")."""

import pytest

from tests.oauthflows.helpers import INTROSPECT, REVOKE, TOKEN, basic, get_code, token_request

pytestmark = pytest.mark.django_db


def assert_rfc6749_error(response, *errors):
    assert response.status_code in (400, 401), (response.status_code, response.content[:300])
    assert response.json()["error"] in errors


@pytest.mark.parametrize(
    "field",
    ["redirect_uri", "code", "client_id", "client_secret", "grant_type", "scope", "code_verifier", "state"],
)
def test_a_nul_in_any_code_exchange_parameter_is_invalid_request(browser, api, confidential, field):
    client, secret = confidential
    data = {
        "grant_type": "authorization_code",
        "code": get_code(browser, client),
        "redirect_uri": client.redirect_uri_list[0],
        "client_id": client.client_id,
        "client_secret": secret,
    }
    data[field] = (data.get(field) or "x") + "\x00"
    assert_rfc6749_error(token_request(api, data), "invalid_request")
    assert_rfc6749_error(token_request(api, data, as_json=True), "invalid_request")


@pytest.mark.parametrize("field", ["refresh_token", "scope", "client_id"])
def test_a_nul_in_a_refresh_parameter_is_invalid_request(api, confidential, field):
    client, secret = confidential
    data = {"grant_type": "refresh_token", "refresh_token": "r", "client_id": client.client_id, "client_secret": secret}
    data[field] = (data.get(field) or "x") + "\x00"
    assert_rfc6749_error(token_request(api, data), "invalid_request")


def test_a_nul_in_a_parameter_name_or_the_query_string_is_invalid_request(api, confidential):
    client, secret = confidential
    body = {"grant_type": "refresh_token", "refresh_token": "r", "client_id": client.client_id, "client_secret": secret}
    assert_rfc6749_error(token_request(api, {**body, "x\x00": "1"}), "invalid_request")
    response = api.post(TOKEN + "?redirect_uri=https%3A%2F%2Fa%00", data=body)
    assert_rfc6749_error(response, "invalid_request")


def test_a_nul_in_basic_credentials_is_invalid_client(api, confidential):
    client, secret = confidential
    for auth in (basic(client.client_id + "\x00", secret), basic(client.client_id, secret + "\x00")):
        response = token_request(api, {"grant_type": "refresh_token", "refresh_token": "r"}, auth=auth)
        assert_rfc6749_error(response, "invalid_client")


@pytest.mark.parametrize("path", [REVOKE, INTROSPECT])
@pytest.mark.parametrize("field", ["token", "token_type_hint", "client_id", "client_secret"])
def test_a_nul_in_a_revocation_or_introspection_parameter_is_a_4xx(api, confidential, path, field):
    client, secret = confidential
    data = {"token": "t", "token_type_hint": "access_token", "client_id": client.client_id, "client_secret": secret}
    data[field] += "\x00"
    assert_rfc6749_error(api.post(path, data=data), "invalid_request", "invalid_client")
