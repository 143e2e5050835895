"""JWT access tokens across processes: this server (gunicorn, PostgreSQL) issues them for a resource
server registered with `--token-format jwt`, and the example bookings service (its own gunicorn,
OAUTH_TOKEN_FORMAT=jwt) verifies them with the JWKS and the status list, without calling this server
per request, and refuses a revoked token within the list's ttl."""

import base64
import json
import re
import threading
import time
from contextlib import contextmanager

import pytest
import requests
from django.conf import settings as test_settings

from oauthclients import services
from signing.keys import signing_key_create, signing_key_rotate
from signing.statuslist import allocator
from tests.integration.flows import TIMEOUT, authorize, exchange, login, make_server_user, refresh
from tests.integration.server import (
    example_service_environment,
    free_port,
    running_server,
    server_environment,
    stop,
)

BOOKINGS = "http://127.0.0.1:8001/v2"  # the example service's default OAUTH_RESOURCE_URI
REVOKE = "/v2/auth/oauth2/revoke"
TTL = 2


@pytest.fixture
def issuer_port():
    return free_port()


@pytest.fixture
def server(request, _postgres_only_guard, transactional_db, issuer_port):
    """This server on a known port (its issuer URL is in every JWT), logging each request."""
    from django.db import connection

    from tests.integration.server import database_url

    allocator.forget()
    signing_key_create(algorithm="ES256")
    env = server_environment(
        database_url(connection.settings_dict),
        OAUTH_ISSUER=f"http://127.0.0.1:{issuer_port}",
        OAUTH_SIGNING_KEY_ENCRYPTION_KEY=test_settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY,
        OAUTH_STATUS_LIST_TTL=str(TTL),
        OAUTH_SIGNING_KEY_PUBLISH_AHEAD="2",
    )
    with running_server(None, environment=env, port=issuer_port, access_log=True) as live:
        yield live


@pytest.fixture
def jwt_bookings_credentials(transactional_db):
    ops = make_server_user("ops", staff=True)
    created = services.resource_server_create(
        owner=ops, name="Bookings API", resource_uri=BOOKINGS, actor=ops, token_format="jwt"
    )
    return created.client.client_id, created.secret.plaintext


@contextmanager
def bookings_service(server, jwt_bookings_credentials, **extra):
    client_id, secret = jwt_bookings_credentials
    environment = example_service_environment(
        server.url, client_id, secret, OAUTH_TOKEN_FORMAT="jwt", OAUTH_ISSUER=server.url, **extra
    )
    # One worker: what it fetched (JWKS, lists) serves every later request.
    with running_server(None, workers=1, app="examples.bookings_service.wsgi", environment=environment) as live:
        yield live


@pytest.fixture
def jwt_bookings_process(server, jwt_bookings_credentials):
    with bookings_service(server, jwt_bookings_credentials) as live:
        yield live


@pytest.fixture
def app_scopes():
    return ["PROFILE_READ", "BOOKING_READ"]


def issue(server, server_app, user, *, resource=BOOKINGS) -> dict:
    client, secret = server_app
    code = authorize(login(server.url, user.username), server.url, client, scope="BOOKING_READ", resource=resource)
    response = exchange(server.url, client, secret, code)
    assert response.status_code == 200, response.text
    return response.json()


def call(service, token):
    return requests.get(service.url + "/v2/bookings", headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)


def requests_to(server, path: str) -> int:
    """How many requests for `path` the server's access log shows."""
    return len(re.findall(rf'"(?:GET|POST) {re.escape(path)}', server.log_path.read_text(errors="replace")))


def test_the_service_verifies_without_calling_home_per_request(server, jwt_bookings_process, server_app):
    user = make_server_user("alice")
    token = issue(server, server_app, user)["access_token"]
    assert token.count(".") == 2
    started = time.monotonic()
    for _ in range(40):
        answer = call(jwt_bookings_process, token)
        assert answer.status_code == 200, answer.text
    elapsed = time.monotonic() - started
    assert answer.json()["scopes"] == ["BOOKING_READ"]
    assert requests_to(server, "/v2/auth/oauth2/introspect") == 0
    assert requests_to(server, "/.well-known/jwks.json") == 1
    lists = requests_to(server, "/v2/auth/oauth2/status-lists/")
    assert 1 <= lists <= elapsed / TTL + 2  # once per ttl, not once per request


def test_a_revoked_token_is_refused_within_the_ttl(server, jwt_bookings_process, server_app):
    client, secret = server_app
    user = make_server_user("bob")
    token = issue(server, server_app, user)["access_token"]
    assert call(jwt_bookings_process, token).status_code == 200
    revoked = requests.post(
        server.url + REVOKE,
        data={"token": token, "client_id": client.client_id, "client_secret": secret},
        timeout=TIMEOUT,
    )
    assert revoked.status_code == 200
    revoked_at = time.monotonic()
    while call(jwt_bookings_process, token).status_code == 200:
        assert time.monotonic() - revoked_at < TTL + 1.5, "still accepted after the list's ttl"
        time.sleep(0.1)
    refused = call(jwt_bookings_process, token)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]


def test_a_refresh_ends_the_old_jwt_there_too(server, jwt_bookings_process, server_app):
    client, secret = server_app
    user = make_server_user("carol")
    first = issue(server, server_app, user)
    second = refresh(server.url, client.client_id, secret, first["refresh_token"]).json()
    assert call(jwt_bookings_process, second["access_token"]).status_code == 200
    time.sleep(TTL + 0.3)
    assert call(jwt_bookings_process, first["access_token"]).status_code == 401
    assert call(jwt_bookings_process, second["access_token"]).status_code == 200


def test_an_opaque_token_is_introspected_there(server, jwt_bookings_process, server_app):
    user = make_server_user("dave")
    token = issue(server, server_app, user, resource=None)["access_token"]
    assert token.count(".") == 0
    assert call(jwt_bookings_process, token).status_code == 200
    assert requests_to(server, "/v2/auth/oauth2/introspect") == 1


def test_the_authorization_server_down_is_503_after_the_staleness_bound(server, jwt_bookings_credentials, server_app):
    user = make_server_user("erin")
    token = issue(server, server_app, user)["access_token"]
    bound = 8
    with bookings_service(server, jwt_bookings_credentials, OAUTH_STATUS_LIST_MAX_STALENESS=str(bound)) as bookings:
        assert call(bookings, token).status_code == 200
        fetched = time.monotonic()  # the service fetched the list for that call
        stop(server.process)
        # Past the ttl, within the bound (timed from the fetch: stopping the server takes a while).
        time.sleep(max(0.0, fetched + TTL + 0.3 - time.monotonic()))
        assert time.monotonic() - fetched < bound - 1
        assert call(bookings, token).status_code == 200  # the last list, still within the bound
        time.sleep(max(0.0, fetched + bound + 0.5 - time.monotonic()))
        answer = call(bookings, token)
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"


def test_a_key_rotation_fails_no_request(server, jwt_bookings_credentials, server_app, settings):
    settings.OAUTH_SIGNING_KEY_PUBLISH_AHEAD = 2  # as the server's: the rotation is made here
    users = [make_server_user(f"user{index}") for index in range(3)]
    failures, served = [], []
    stop_at = time.monotonic() + 11
    with bookings_service(server, jwt_bookings_credentials, OAUTH_JWKS_MAX_AGE="1") as bookings:

        def keep_calling(user):
            while time.monotonic() < stop_at:
                token = issue(server, server_app, user)["access_token"]
                answer = call(bookings, token)
                if answer.status_code == 200:
                    served.append(json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["kid"])
                else:
                    failures.append((answer.status_code, answer.text[:200]))

        threads = [threading.Thread(target=keep_calling, args=(user,)) for user in users]
        for thread in threads:
            thread.start()
        time.sleep(1)
        new = signing_key_rotate(algorithm="ES256")  # published now, signs 2 s later
        for thread in threads:
            thread.join()
        log = bookings.log_tail(50)
    assert failures == [], log
    # Tokens signed by the old key and, once it took over (2 s + the signer's 5 s), by the new one.
    assert new.kid in served and len(set(served)) == 2, set(served)
