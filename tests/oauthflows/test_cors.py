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
    assert_tokens,
    client_post,
    exchange,
    get_code,
    pkce_pair,
    refresh,
)
from tests.oauthflows.test_token import assert_token_error

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


# --- red-team finding 4: exact origins, approved clients only, never crowded out ---


@pytest.mark.parametrize("path", [TOKEN, REVOKE])
def test_fifty_pending_clients_naming_the_origin_cannot_crowd_out_the_real_app(db, api, spa, owner, path):
    for n in range(60):
        make_client(
            owner,
            name=f"Squatter {n}",
            kind="public",
            redirect_uris=[f"https://squat{n}.example/cb?http://127.0.0.1:3000", f"https://squat{n}.example/{SPA}"],
        )
    response = preflight(api, path, "http://127.0.0.1:3000")
    assert response[ACAO] == "http://127.0.0.1:3000"
    assert preflight(api, path, SPA)[ACAO] == SPA


@pytest.mark.parametrize("status", ["pending", "rejected", "deleted"])
def test_a_public_client_that_is_not_approved_gets_no_cors(db, api, owner, reviewer, status):
    origin = "https://pending-spa.example"
    app = make_client(owner, name="Pending SPA", kind="public", redirect_uris=[origin + "/cb"]).client
    if status == "rejected":
        services.client_reject(client=app, actor=reviewer, reason="No.")
    elif status == "deleted":
        app = services.client_approve(client=app, actor=reviewer)
        services.client_delete(client=app, actor=owner)
    assert not preflight(api, TOKEN, origin).has_header(ACAO)
    response = client_post(api, REVOKE, app, {"token": "x"}, origin=origin)
    assert not response.has_header(ACAO)


def test_an_origin_only_inside_a_query_or_path_is_not_an_origin(db, api, owner):
    make_client(
        owner,
        name="Tricky",
        kind="public",
        redirect_uris=["https://tricky.example/cb?next=https://victim.example"],
        approve=True,
    )
    assert not preflight(api, TOKEN, "https://victim.example").has_header(ACAO)
    assert preflight(api, TOKEN, "https://tricky.example")[ACAO] == "https://tricky.example"


def test_approving_a_spa_opens_its_origin_at_once(db, api, owner, reviewer):
    origin = "https://new-spa.example"
    app = make_client(owner, name="New SPA", kind="public", redirect_uris=[origin + "/cb"]).client
    assert not preflight(api, TOKEN, origin).has_header(ACAO)  # the set is now cached without it
    services.client_approve(client=app, actor=reviewer)
    assert preflight(api, TOKEN, origin)[ACAO] == origin


# --- first-hour finding 13: a browser app can call /v2/me ---


def test_a_spa_reads_its_users_profile(browser, api, spa):
    tokens = spa_tokens(browser, api, spa)
    pre = preflight(api, ME, SPA, method="GET")
    assert pre.status_code == 200 and pre[ACAO] == SPA
    assert "authorization" in pre["Access-Control-Allow-Headers"]
    response = api.get(ME, HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}", HTTP_ORIGIN=SPA)
    assert response.status_code == 200 and response[ACAO] == SPA
    assert_no_credentials(response)
    assert "PATCH" in preflight(api, ME, SPA, method="PATCH")["Access-Control-Allow-Methods"]


def test_me_answers_no_other_origin(browser, api, spa):
    tokens = spa_tokens(browser, api, spa)
    response = api.get(ME, HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}", HTTP_ORIGIN=EVIL)
    assert response.status_code == 200 and not response.has_header(ACAO)


# --- browser-based MCP clients (MCP Inspector) --------------------------------------------------


def preflight_with_header(api, path, origin, header, method="GET"):
    return api.options(
        path,
        HTTP_ORIGIN=origin,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD=method,
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS=header,
    )


@pytest.mark.parametrize(
    ("path", "method"),
    [(METADATA, "GET"), ("/.well-known/openid-configuration", "GET"), ("/v2/auth/oauth2/register", "POST")],
)
def test_a_browser_mcp_client_may_send_its_protocol_version_header(db, api, path, method):
    """The MCP SDKs send `MCP-Protocol-Version` with their discovery requests: a preflight that
    refused it made MCP Inspector's first metadata fetch fail in the browser (the SDK then tried
    again without it), and a client without that retry could not discover this server at all."""
    response = preflight_with_header(api, path, "http://localhost:6274", "mcp-protocol-version", method)
    assert response[ACAO] == "http://localhost:6274"
    assert "mcp-protocol-version" in response["Access-Control-Allow-Headers"].split(", ")


def test_the_token_endpoint_lets_a_public_clients_origin_send_it_too(db, api, spa):
    response = preflight_with_header(api, TOKEN, SPA, "mcp-protocol-version", "POST")
    assert response[ACAO] == SPA
    assert "mcp-protocol-version" in response["Access-Control-Allow-Headers"].split(", ")
    # Still only the listed headers: any other one is not allowed to a page.
    other = preflight_with_header(api, METADATA, SPA, "x-anything")
    assert "x-anything" not in other["Access-Control-Allow-Headers"]
