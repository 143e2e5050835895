"""This server and the example resource server (examples/bookings_service) as separate gunicorn
processes: tokens issued here are verified there by introspection, over real HTTP."""

import time

import pytest
import requests

from oauthclients import services
from tests.factories import make_client
from tests.integration.flows import TIMEOUT, authorize, exchange, make_server_user
from tests.integration.server import example_service_environment, running_server, stop

REVOKE = "/v2/auth/oauth2/revoke"
# The example service's default OAUTH_RESOURCE_URI (examples/bookings_service/settings.py).
BOOKINGS_RESOURCE = "http://127.0.0.1:8001/v2"


@pytest.fixture
def bookings_credentials(transactional_db):
    ops = make_server_user("ops", staff=True)
    created = services.resource_server_create(owner=ops, name="Bookings API", resource_uri=BOOKINGS_RESOURCE, actor=ops)
    return created.client.client_id, created.secret.plaintext


@pytest.fixture
def service_cache_seconds():
    return 0


@pytest.fixture
def bookings_process(server, bookings_credentials, service_cache_seconds):
    """The example service, configured only by its four variables, pointing at `server`."""
    client_id, secret = bookings_credentials
    environment = example_service_environment(
        server.url, client_id, secret, OAUTH_INTROSPECTION_CACHE_SECONDS=str(service_cache_seconds)
    )
    # One worker, so that a cached answer is seen by the next request (the cache is per process).
    with running_server(None, workers=1, app="examples.bookings_service.wsgi", environment=environment) as live:
        yield live


@pytest.fixture
def user(transactional_db):
    return make_server_user("alice")


def issue(server, user, *, scope: str, legacy: bool = False, resource: str | None = None) -> tuple:
    """(the app client, its secret, the token response) after a real consent and exchange."""
    from tests.integration.flows import login

    created = make_client(
        user,
        name="Legacy" if legacy else "Calendar",
        redirect_uris=["http://localhost:8765/cb"],
        scopes=None if legacy else scope.split(),
        is_legacy=legacy,
        approve=True,
    )
    browser = login(server.url, user.username)
    code = authorize(browser, server.url, created.client, scope="" if legacy else scope, resource=resource)
    response = exchange(server.url, created.client, created.secret.plaintext, code)
    assert response.status_code == 200, response.text
    return created.client, created.secret.plaintext, response.json()


def call(service, path, token=None, method="get"):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.request(method, service.url + path, headers=headers, timeout=TIMEOUT)


def test_scopes_are_enforced_by_the_second_service(server, bookings_process, user):
    _client, _secret, tokens = issue(server, user, scope="PROFILE_READ BOOKING_READ")
    token = tokens["access_token"]
    answer = call(bookings_process, "/v2/bookings", token)
    assert answer.status_code == 200, answer.text
    assert answer.json()["username"] == "alice" and answer.json()["scopes"] == ["PROFILE_READ", "BOOKING_READ"]
    refused = call(bookings_process, "/v2/bookings", token, method="post")
    assert refused.status_code == 403
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer realm="api", error="insufficient_scope", scope="BOOKING_WRITE", '
        'resource_metadata="http://127.0.0.1:8001/.well-known/oauth-protected-resource/v2"'
    )
    assert call(bookings_process, "/v2/teams/4/bookings", token).status_code == 403
    assert call(bookings_process, "/v2/slots").json()["username"] is None  # public
    missing = call(bookings_process, "/v2/bookings")
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == (
        'Bearer realm="api", resource_metadata="http://127.0.0.1:8001/.well-known/oauth-protected-resource/v2"'
    )
    # The refresh token is no credential at a resource server.
    assert call(bookings_process, "/v2/bookings", tokens["refresh_token"]).status_code == 401


def test_an_org_scope_grants_the_team_scope_there_too(server, bookings_process, user):
    _client, _secret, tokens = issue(server, user, scope="ORG_BOOKING_READ")
    assert call(bookings_process, "/v2/teams/4/bookings", tokens["access_token"]).json()["teamId"] == 4
    assert call(bookings_process, "/v2/organizations/2/teams/4/bookings", tokens["access_token"]).status_code == 200
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 403


def test_a_legacy_token_has_full_access_there(server, bookings_process, user):
    _client, _secret, tokens = issue(server, user, scope="", legacy=True)
    for path, method in [("/v2/bookings", "post"), ("/v2/organizations/2/teams/4/bookings", "get")]:
        answer = call(bookings_process, path, tokens["access_token"], method=method)
        assert answer.status_code in (200, 201), answer.text
        assert answer.json()["scopes"] == []


def test_a_revoked_token_and_a_rejected_clients_token_are_refused_at_once(server, bookings_process, user):
    client, secret, tokens = issue(server, user, scope="BOOKING_READ")
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 200
    revoke = requests.post(
        server.url + REVOKE,
        data={"token": tokens["access_token"], "client_id": client.client_id, "client_secret": secret},
        timeout=TIMEOUT,
    )
    assert revoke.status_code == 200
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 401

    client, _secret, tokens = issue(server, user, scope="BOOKING_READ")
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 200
    services.client_reject(client=client, actor=None, reason="Abuse")
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 401


@pytest.mark.parametrize("service_cache_seconds", [2])
def test_with_a_cache_a_revocation_bites_within_the_cache_time(server, bookings_process, user):
    client, secret, tokens = issue(server, user, scope="BOOKING_READ")
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 200
    revoked_at = time.monotonic()
    requests.post(
        server.url + REVOKE,
        data={"token": tokens["access_token"], "client_id": client.client_id, "client_secret": secret},
        timeout=TIMEOUT,
    )
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 200  # the cached answer
    time.sleep(max(0.0, 2.2 - (time.monotonic() - revoked_at)))
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 401


def test_the_authorization_server_down_is_503_there(server, bookings_process, user):
    _client, _secret, tokens = issue(server, user, scope="BOOKING_READ")
    assert call(bookings_process, "/v2/bookings", tokens["access_token"]).status_code == 200
    stop(server.process)
    answer = call(bookings_process, "/v2/bookings", tokens["access_token"])
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "service_unavailable" and answer.headers["Retry-After"] == "5"
    assert call(bookings_process, "/v2/slots").status_code == 200  # public, no token: still served


def test_the_second_service_publishes_its_metadata_and_checks_the_audience(server, bookings_process, user):
    metadata = requests.get(bookings_process.url + "/.well-known/oauth-protected-resource/v2", timeout=TIMEOUT)
    assert metadata.status_code == 200, metadata.text
    assert metadata.json() == {
        "resource": BOOKINGS_RESOURCE,
        "authorization_servers": [server.url],
        "scopes_supported": ["BOOKING_READ", "BOOKING_WRITE", "TEAM_BOOKING_READ", "ORG_BOOKING_READ"],  # README table
        "bearer_methods_supported": ["header"],
        "resource_name": "Example bookings service",
    }
    assert (
        requests.get(bookings_process.url + "/.well-known/oauth-protected-resource/v3", timeout=TIMEOUT).status_code
        == 404
    )

    _c, _s, bound = issue(server, user, scope="PROFILE_READ BOOKING_READ", resource=BOOKINGS_RESOURCE)
    assert call(bookings_process, "/v2/bookings", bound["access_token"]).status_code == 200
    # Bound to the bookings service: the authorization server's own API refuses it.
    elsewhere = requests.get(server.url + "/v2/me", headers={"Authorization": f"Bearer {bound['access_token']}"})
    assert elsewhere.status_code == 401

    _c, _s, own = issue(
        server, user, scope="PROFILE_READ BOOKING_READ", resource="http://localhost:8000/v2"
    )  # the default OAUTH_RESOURCE_URI
    refused = call(bookings_process, "/v2/bookings", own["access_token"])
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
