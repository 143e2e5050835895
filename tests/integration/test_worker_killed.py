"""A gunicorn worker killed mid-request (SIGKILL) leaves no half-issued token.

Fifty distinct codes are exchanged eight at a time while workers are killed: preferably a worker
whose database transaction has already locked or written rows (found through pg_stat_activity and
the worker's own sockets), otherwise one at random. Each exchange is one transaction
(oauthflows.token.endpoints.TokenView), and PostgreSQL rolls back the transaction of a connection that
disappears, so for every code exactly one of these holds:

- the exchange answered 200: the grant is used, and its family holds exactly that token pair,
  which works;
- the exchange was cut off: the grant is unused, nothing was minted for it, and a retry succeeds
  (no lock or half-written row was left behind); or, if the worker died after the commit but
  before answering, the grant is used and its pair is complete.
"""

import contextlib
import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from django.db import connection

from oauthclients.models import AccessToken, Grant, RefreshToken, digest
from tests.integration.flows import authorize, exchange, me
from tests.integration.server import wait_until_answering

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

CODES = 50
CLIENT_THREADS = 8
MAX_KILLS = 12


@pytest.fixture
def server_env():
    # Issuing fifty codes and exchanging them under fire may take longer than the default minute.
    return {"OAUTH_AUTHORIZATION_CODE_LIFETIME": "300"}


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def _local_ports_by_inode() -> dict[str, int]:
    ports = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                ports[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
    return ports


def worker_in_transaction(server) -> int | None:
    """A worker whose database transaction holds a transaction id (it has locked or written rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT client_port FROM pg_stat_activity"
            " WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
        )
        busy_ports = {port for (port,) in cursor.fetchall()}
    if not busy_ports:
        return None
    ports = _local_ports_by_inode()
    for pid in server.worker_pids():
        if any(ports.get(inode) in busy_ports for inode in _socket_inodes(pid)):
            return pid
    return None


def kill_workers_until(done: threading.Event, server) -> list[bool]:
    """Kill workers until `done` (at most MAX_KILLS); for each kill, whether it was mid-transaction."""
    rng = random.Random()
    kills: list[bool] = []
    next_random_kill = time.monotonic() + rng.uniform(0.05, 0.2)
    try:
        while not done.is_set() and len(kills) < MAX_KILLS:
            pid = worker_in_transaction(server)
            mid_transaction = pid is not None
            if pid is None and time.monotonic() >= next_random_kill and server.worker_pids():
                pid = rng.choice(server.worker_pids())
            if pid is None:
                time.sleep(0.001)
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                kills.append(mid_transaction)
            next_random_kill = time.monotonic() + rng.uniform(0.05, 0.2)
            time.sleep(rng.uniform(0.02, 0.1))  # let the master bring a worker back
    finally:
        connection.close()
    return kills


def test_killing_workers_mid_exchange_leaves_no_half_issued_token(server, server_app, user_session):
    client, secret = server_app
    codes = [authorize(user_session, server.url, client) for _ in range(CODES)]
    done = threading.Event()

    def attempt(code):
        try:
            return exchange(server.url, client, secret, code)
        except requests.RequestException as exc:  # the worker died under this request
            return exc

    with ThreadPoolExecutor(max_workers=1) as killer, ThreadPoolExecutor(max_workers=CLIENT_THREADS) as pool:
        kills_future = killer.submit(kill_workers_until, done, server)
        try:
            outcomes = dict(zip(codes, pool.map(attempt, codes), strict=True))
        finally:
            done.set()
        kills = kills_future.result(timeout=10)

    wait_until_answering(server.url, time.monotonic() + 20, server.process)
    won = {code: r.json() for code, r in outcomes.items() if getattr(r, "status_code", None) == 200}
    failed = [code for code in codes if code not in won]
    assert any(kills), f"none of {len(kills)} kills caught a worker inside its transaction: the test proved nothing"
    assert all(isinstance(outcomes[code], requests.RequestException) for code in failed), outcomes

    # Nothing half-written anywhere: one pair per used grant, no orphan either way.
    used = Grant.objects.filter(used_at__isnull=False)
    assert RefreshToken.objects.count() == AccessToken.objects.count() == used.count()
    assert not RefreshToken.objects.filter(access_token__isnull=True).exists()
    assert not AccessToken.objects.filter(refresh_token__isnull=True).exists()
    assert not used.filter(token_family__isnull=True).exists()

    for code, tokens in won.items():
        grant = Grant.objects.get(code=digest(code))
        pair = RefreshToken.objects.select_related("access_token").get(token_family=grant.token_family)
        assert pair.revoked is None and pair.token_checksum == digest(tokens["refresh_token"])
        assert pair.access_token.token_checksum == digest(tokens["access_token"])
        assert me(server.url, tokens["access_token"]).status_code == 200

    lost_after_commit = 0
    for code in failed:
        grant = Grant.objects.get(code=digest(code))
        if grant.used_at is None:
            # Rolled back: nothing was minted for it, and nothing stops a retry.
            retry = exchange(server.url, client, secret, code)
            assert retry.status_code == 200, retry.text
            assert me(server.url, retry.json()["access_token"]).status_code == 200
        else:
            # Committed just before the worker died: complete (checked above), only the answer was lost.
            assert RefreshToken.objects.filter(token_family=grant.token_family, revoked__isnull=True).count() == 1
            lost_after_commit += 1
    print(
        f"{len(kills)} workers killed ({sum(kills)} inside a transaction); {len(won)} exchanges answered 200, "
        f"{len(failed)} cut off ({len(failed) - lost_after_commit} rolled back, then retried with success; "
        f"{lost_after_commit} committed but unanswered)"
    )
