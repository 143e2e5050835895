"""CORS for single-page apps (oauthflows/cors.py, django-cors-headers): who may read which answer."""

import pytest

from oauthclients import services
from tests.factories import make_client
from tests.oauthflows.helpers import (
    INTROSPECT,
    ME,
    METADATA,
    REVOKE,
    TOKEN,
    client_post,
    exchange,
    get_code,
    pkce_pair,
    refresh,
)
from tests.oauthflows.test_token import assert_token_error, assert_tokens

SPA = "https://spa.example.com"
EVIL = "https://evil.example.net"
ACAO = "Access-Control-Allow-Origin"


@pytest.fixture
def spa(owner):
    return make_client(
        owner, name="SPA", kind="public", redirect_uris=[SPA + "/callback", "http://127.0.0.1:3000/cb"], approve=True
    ).client


def spa_tokens(browser, api, spa):
    verifier, challenge = pkce_pair()
    code = get_code(browser, spa, code_challenge=challenge)
    return assert_tokens(exchange(api, spa, code, verifier=verifier, origin=SPA), "PROFILE_READ")


def preflight(api, path, origin, method="POST"):
    return api.options(
        path,
        HTTP_ORIGIN=origin,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD=method,
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type",
    )


def assert_no_credentials(response):
    assert not response.has_header("Access-Control-Allow-Credentials")


@pytest.mark.parametrize("origin", [SPA, EVIL, "null", "http://localhost:1234"])
def test_the_metadata_is_readable_from_any_origin(db, api, origin):
    response = api.get(METADATA, HTTP_ORIGIN=origin)
    assert response.status_code == 200 and response[ACAO] == origin
    assert "origin" in response["Vary"].lower()
    assert_no_credentials(response)
    assert preflight(api, METADATA, origin, method="GET")[ACAO] == origin


@pytest.mark.parametrize("path", [TOKEN, REVOKE])
def test_a_preflight_from_a_public_clients_origin_is_answered(db, api, spa, path):
    response = preflight(api, path, SPA)
    assert response.status_code == 200 and response[ACAO] == SPA
    assert "POST" in response["Access-Control-Allow-Methods"]
    assert "content-type" in response["Access-Control-Allow-Headers"]
    assert "authorization" in response["Access-Control-Allow-Headers"]
    assert_no_credentials(response)
    # The loopback origin of the same client, with its port.
    assert preflight(api, path, "http://127.0.0.1:3000")[ACAO] == "http://127.0.0.1:3000"


@pytest.mark.parametrize("path", [TOKEN, REVOKE, INTROSPECT, ME])
@pytest.mark.parametrize("origin", [EVIL, SPA + ":8443", "http://spa.example.com", "https://example.com", "null"])
def test_a_preflight_from_any_other_origin_is_not_allowed(db, api, spa, path, origin):
    response = preflight(api, path, origin)
    assert not response.has_header(ACAO)
    assert_no_credentials(response)


def test_the_spa_reads_its_token_answers_and_nobody_else_does(browser, api, spa):
    tokens = spa_tokens(browser, api, spa)
    response = refresh(api, spa, tokens["refresh_token"], origin=SPA)
    renewed = assert_tokens(response, "PROFILE_READ")
    assert response[ACAO] == SPA
    assert_no_credentials(response)
    # An error is readable by the SPA too, so it can tell the user.
    failed = refresh(api, spa, tokens["refresh_token"], origin=SPA)
    assert_token_error(failed, "invalid_grant")
    assert failed[ACAO] == SPA
    # Another origin gets the same processing, but no CORS header: its page cannot read it.
    foreign = refresh(api, spa, renewed["refresh_token"], origin=EVIL)
    assert not foreign.has_header(ACAO)


def test_the_spa_revokes_from_its_origin(browser, api, spa):
    tokens = spa_tokens(browser, api, spa)
    response = client_post(api, REVOKE, spa, {"token": tokens["refresh_token"]}, origin=SPA)
    assert response.status_code == 200 and response[ACAO] == SPA
    other = client_post(api, REVOKE, spa, {"token": tokens["access_token"]}, origin=EVIL)
    assert other.status_code == 200 and not other.has_header(ACAO)


def test_introspection_has_no_cors(browser, api, spa, confidential):
    client, secret = confidential
    response = client_post(api, INTROSPECT, client, {"token": "x"}, secret=secret, origin=SPA)
    assert response.status_code == 200 and not response.has_header(ACAO)


def test_a_confidential_clients_origin_gets_no_cors(browser, api, confidential):
    client, secret = confidential  # registers https://app.example.com/callback
    origin = "https://app.example.com"
    assert not preflight(api, TOKEN, origin).has_header(ACAO)
    response = exchange(api, client, get_code(browser, client), secret=secret, origin=origin)
    assert_tokens(response, "PROFILE_READ")
    assert not response.has_header(ACAO)


def test_a_rejected_spa_loses_its_cors(browser, api, spa, reviewer):
    services.client_reject(client=spa, actor=reviewer, reason="Abuse")
    assert not preflight(api, TOKEN, SPA).has_header(ACAO)
    response = refresh(api, spa, "x", origin=SPA)
    assert response.status_code in (400, 401) and not response.has_header(ACAO)


def test_another_public_clients_origin_is_not_this_clients(browser, api, spa, owner):
    make_client(owner, name="Other SPA", kind="public", redirect_uris=[EVIL + "/cb"], approve=True)
    assert preflight(api, TOKEN, EVIL)[ACAO] == EVIL  # a preflight has no client_id to tell
    tokens = spa_tokens(browser, api, spa)
    response = refresh(api, spa, tokens["refresh_token"], origin=EVIL)
    assert_tokens(response, "PROFILE_READ")
    assert not response.has_header(ACAO)
