"""Two server processes, one PostgreSQL database and one Redis: what a load-balanced deployment is.

Two separate gunicorn masters (tests/integration/server.py) on two ports, production settings,
the same DJANGO_SECRET_KEY, the test's database and a Redis database of their own. Each step of the
flow lands on a different server than the one before, so nothing may live in one process's
memory: the browser session, the code, the tokens, and the rate-limit counts (REDIS_URL).

PostgreSQL only: the servers and the test share the test database (hence transactional_db).
"""

import contextlib
import os
import secrets
from collections.abc import Iterator

import pytest
import redis
import requests
from django.db import connection

from tests.factories import PASSWORD
from tests.integration.conftest import REPORTS
from tests.integration.flows import (
    _csrf_token,
    authorize,
    exchange,
    form_post,
    login,
    make_server_user,
    me,
    refresh,
)
from tests.integration.server import database_url, print_log, running_server

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
# A run claims one of these Redis databases (never 0, the default anyone's REDIS_URL points at),
# so that runs in parallel (CI and a developer's `make test`) never flush each other's counts.
REDIS_DATABASES = range(15, 7, -1)
REDIS_LOCK = "two-servers-test:lock"
REDIS_LOCK_SECONDS = 600
LOGIN_FAILURES_ALLOWED = 4
WORKERS = 2


def _must_have(reason: str) -> None:
    if os.environ.get("REQUIRE_POSTGRES") == "1" or os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (Redis is required with REQUIRE_POSTGRES=1 or CI=true)")
    pytest.skip(reason)


def _only_ours(client) -> bool:
    """Empty, or holding only what a run of this test leaves behind (lock, rate-limit counters)."""
    return all(key == REDIS_LOCK.encode() or b":ratelimit:" in key for key in client.scan_iter(count=1000))


@pytest.fixture
def redis_db(_postgres_only_guard) -> Iterator[int]:
    """A Redis database number claimed for this test (lock key), emptied before and after."""
    token = secrets.token_hex(16)
    claimed = None
    try:
        for number in REDIS_DATABASES:
            client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=number, socket_timeout=5)
            if client.set(REDIS_LOCK, token, nx=True, ex=REDIS_LOCK_SECONDS):
                if _only_ours(client):
                    claimed = (number, client)
                    break
                client.delete(REDIS_LOCK)  # somebody else's data: leave that database alone
            client.close()
    except redis.RedisError as exc:
        _must_have(f"Redis at {REDIS_HOST}:{REDIS_PORT} is not usable: {exc!r}")
    if claimed is None:
        pytest.fail(f"no free Redis database among {list(REDIS_DATABASES)} (lock key {REDIS_LOCK})")
    number, client = claimed

    def flush() -> None:
        # Atomically: empty the database and keep it claimed.
        with client.pipeline(transaction=True) as pipe:
            pipe.flushdb().set(REDIS_LOCK, token, ex=REDIS_LOCK_SECONDS).execute()

    flush()
    try:
        yield number
    finally:
        flush()
        if client.get(REDIS_LOCK) == token.encode():
            client.delete(REDIS_LOCK)
        client.close()


@pytest.fixture
def servers(request, _postgres_only_guard, transactional_db, redis_db):
    """Two gunicorn masters sharing the test database, one Redis database and one secret key."""
    env = {
        "REDIS_URL": f"redis://{REDIS_HOST}:{REDIS_PORT}/{redis_db}",
        "DJANGO_SECRET_KEY": "two-servers-" + secrets.token_urlsafe(32),
        "RATELIMIT_ENABLED": "1",
        "RATELIMIT_LOGIN_FAILURES_PER_ADDRESS": f"{LOGIN_FAILURES_ALLOWED}/h",
        # A replay is a replay at once (no grace for racing duplicates): the test sends none.
        "OAUTH_REPLAY_GRACE_SECONDS": "0",
    }
    url = database_url(connection.settings_dict)
    with contextlib.ExitStack() as stack:
        live = [stack.enter_context(running_server(url, workers=WORKERS, env=env)) for _ in range(2)]
        assert live[0].url != live[1].url
        yield live
        report = request.node.stash.get(REPORTS, {}).get("call")
        if report is None or report.failed:
            for server in live:
                print_log(server)


def test_authorize_on_one_exchange_on_the_other_refresh_back_and_call_the_api(servers, server_app):
    first, second = (server.url for server in servers)
    client, secret = server_app
    user = make_server_user("traveller")

    browser = login(first, user.username)
    # The session lives in the database and is signed with the shared key: the second knows it too.
    assert browser.get(second + "/settings/apps/", allow_redirects=False, timeout=15).status_code == 200
    code = authorize(browser, first, client)

    exchanged = exchange(second, client, secret, code)
    assert exchanged.status_code == 200, exchanged.text
    tokens = exchanged.json()

    refreshed = refresh(first, client.client_id, secret, tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    renewed = refreshed.json()

    answer = me(second, renewed["access_token"])
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["username"] == "traveller"
    # Both see the rotation: the old access token is dead on the first, and the old refresh token
    # is a replay on the second.
    assert me(first, tokens["access_token"]).status_code == 401
    assert refresh(second, client.client_id, secret, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    # That replay revoked the family (no grace here): the current tokens die on both servers.
    assert me(second, renewed["access_token"]).status_code == 401
    assert me(first, renewed["access_token"]).status_code == 401
    # And the code stays single use across servers.
    assert exchange(first, client, secret, code).json()["error"] == "invalid_grant"


def test_login_failures_spread_over_both_servers_share_one_limit(servers, redis_db):
    first, second = (server.url for server in servers)
    make_server_user("target")
    browsers = {}
    for base in (first, second):
        session = requests.Session()  # a browser per server, with that server's CSRF cookie
        browsers[base] = (session, _csrf_token(session.get(base + "/accounts/login/", timeout=15)))

    def attempt(base: str, password: str = "wrong-password"):
        session, token = browsers[base]
        return form_post(session, base, "/accounts/login/", token, username="target", password=password)

    # Alternate servers: neither sees more than half of the failures by itself.
    alternating = [first, second] * LOGIN_FAILURES_ALLOWED
    for base in alternating[:LOGIN_FAILURES_ALLOWED]:
        response = attempt(base)
        assert response.status_code == 200, (base, response.status_code)  # the form again: a failure

    for base in (first, second):
        refused = attempt(base)
        assert refused.status_code == 429, (base, refused.status_code, refused.text[:200])
        assert 1 <= int(refused.headers["Retry-After"]) <= 3600
    # Even the right password is refused now, on either server.
    assert attempt(second, password=PASSWORD).status_code == 429

    with redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=redis_db) as shared:
        assert shared.keys("*ratelimit:login_failures_per_address*")  # the count is kept in Redis
