"""plumbing.postgresql: the health check pings only a connection the server has spoken on, and counts it.

On PostgreSQL only (the engine is PostgreSQL's). The outage test under gunicorn is
tests/integration/test_database_outage.py; these check the mechanism on one connection.
"""

import time

import psycopg
import pytest
from django.db import connection, transaction
from django.test import Client

from oauthclients.models import OAuthClient

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def persistent(settings):
    """The connection as a server's worker has it between requests: open, idle, check due."""
    connection.ensure_connection()
    enabled = connection.health_check_enabled
    connection.health_check_enabled = True
    connection.health_check_done = False
    yield connection
    connection.health_check_enabled = enabled


def _dsn() -> str:
    params = connection.get_connection_params()
    return psycopg.conninfo.make_conninfo(
        **{k: v for k, v in params.items() if k in ("host", "port", "user", "password", "dbname")}
    )


def _terminate(persistent) -> None:
    """The server ends the connection (as a restart or pg_terminate_backend does); wait for its goodbye."""
    with psycopg.connect(_dsn(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [persistent.connection.info.backend_pid])
    deadline = time.monotonic() + 5
    while persistent._socket_is_quiet() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_engine_is_ours():
    assert connection.settings_dict["ENGINE"] == "plumbing.postgresql"


def test_a_quiet_connection_is_kept_without_a_round_trip(persistent):
    before, raw = persistent.health_check_pings, persistent.connection
    persistent.close_if_health_check_failed()
    assert persistent.health_check_pings == before  # no SELECT 1 sent
    assert persistent.connection is raw and persistent.health_check_done


def test_a_connection_the_server_ended_is_pinged_and_replaced(persistent):
    before, raw = persistent.health_check_pings, persistent.connection
    pid = raw.info.backend_pid
    _terminate(persistent)
    persistent.close_if_health_check_failed()
    assert persistent.health_check_pings == before + 1  # this one was sent, and counted
    assert persistent.connection is None  # closed; the next query reconnects
    assert OAuthClient.objects.count() == 0
    assert persistent.connection.info.backend_pid != pid


def test_a_connection_in_a_transaction_is_pinged(persistent):
    before = persistent.health_check_pings
    with transaction.atomic():
        OAuthClient.objects.count()
        persistent.health_check_done = False
        assert not persistent._socket_is_quiet()
        persistent.close_if_health_check_failed()
    assert persistent.health_check_pings == before + 1


def test_transactions_count_their_begin_and_commit(persistent):
    before = persistent.transaction_round_trips
    with transaction.atomic():
        OAuthClient.objects.count()
    assert persistent.transaction_round_trips == before + 2
    with transaction.atomic():
        pass  # nothing sent: psycopg never began a transaction on the server
    assert persistent.transaction_round_trips == before + 2


@pytest.mark.urls("bench.urls")
@pytest.mark.parametrize("server_ended_it", [False, True])
def test_the_bench_headers_count_statements_pings_and_transactions(settings, persistent, server_ended_it):
    settings.MIDDLEWARE = ["bench.middleware.QueryCountMiddleware", *settings.MIDDLEWARE]
    if server_ended_it:
        _terminate(persistent)
    response = Client().post("/floor/token", {"grant_type": "refresh_token", "client_id": "x", "client_secret": "y"})
    assert response.status_code == 401
    # One statement (the secret lookup) in a transaction: BEGIN, SELECT, COMMIT; and the health
    # check's SELECT 1 when the server had ended the connection.
    pings = 1 if server_ended_it else 0
    assert response["X-DB-Queries"] == str(1 + pings)
    assert response["X-DB-Round-Trips"] == str(3 + pings)


def test_with_health_check_ping_every_check_is_a_select_1(persistent, monkeypatch):
    monkeypatch.setitem(persistent.settings_dict, "HEALTH_CHECK", "ping")
    before, raw = persistent.health_check_pings, persistent.connection
    persistent.close_if_health_check_failed()
    assert persistent.health_check_pings == before + 1
    assert persistent.connection is raw  # it answered: kept
