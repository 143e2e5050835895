"""A fleet: two gunicorn servers (config/gunicorn.py, two workers each) behind Debian's HAProxy
(docs/haproxy.cfg, used as written), on PostgreSQL and Redis, under a load of authorize + exchange
+ refresh + introspection from several clients at once.

- A rolling restart (each server in turn: SIGTERM, the readiness drain, a new server on the same
  port, ready) costs no request at all.
- A server SIGKILLed mid-load loses only the requests in flight on it. Each cut-off exchange or
  refresh is retried once, as a client would: it succeeds if its transaction did not commit, and
  answers invalid_grant if it did (single use holds; within the replay grace nothing is revoked),
  and the client starts a new authorization. Counted in the database afterwards: every redeemed
  code and every rotated refresh token is accounted for by exactly one answer, nothing twice.

The figures are printed (docs/operating.md quotes them). PostgreSQL's own restart under load is
tests/integration/test_database_outage.py.
"""

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
from django.db import connection

from oauthclients.models import AuditAction, ClientAuditEvent, Grant, RefreshToken
from tests.factories import make_client
from tests.integration.flows import TIMEOUT, authorize, exchange, login, make_server_user, refresh
from tests.integration.server import (
    PROJECT_ROOT,
    _die_with_parent,
    database_url,
    free_port,
    server_environment,
    stop,
)

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
CONFIG = PROJECT_ROOT / "docs" / "haproxy.cfg"
CLIENTS = 4
# docs/haproxy.cfg: out of the pool within (inter 1 s + timeout check 2 s) x fall 2 = 6 s, back
# within inter x rise 2 = 2 s (and a check).
DRAIN_SECONDS = 7.0
BACK_IN_POOL = 3.0
CUT_OFF = (502, 503, 504)


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)
    retried: Counter = field(default_factory=Counter)
    exchanged: int = 0  # codes redeemed with a 200 (first try or retry)
    exchange_lost: int = 0  # cut off after the commit: the retry said invalid_grant
    refreshed: int = 0
    refresh_lost: int = 0

    def add(self, kind: str, outcome, expected: bool) -> None:
        with self.lock:
            self.statuses[(kind, outcome)] += 1
            if not expected:
                self.failures.append((kind, outcome))

    @property
    def requests(self) -> int:
        return sum(self.statuses.values())


class Fleet:
    def __init__(self, env: dict, log_dir: Path):
        self.env = env
        self.log_dir = log_dir
        self.ports = [free_port(), free_port()]
        self.servers: dict[int, subprocess.Popen] = {}
        self.haproxy: subprocess.Popen | None = None
        self.url = ""

    def start_server(self, port: int) -> None:
        log = (self.log_dir / f"gunicorn-{port}.log").open("ab")
        self.servers[port] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                "config/gunicorn.py",
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--graceful-timeout",
                "10",
                "--no-control-socket",
            ],
            cwd=PROJECT_ROOT,
            env={**self.env, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="fleet-prometheus-")},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.servers[port].poll() is None, self.log_tail(port)
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.1)
        raise AssertionError(f"server on {port} not ready:\n{self.log_tail(port)}")

    def start(self) -> "Fleet":
        for port in self.ports:
            self.start_server(port)
        bind = free_port()
        self.url = f"http://127.0.0.1:{bind}"
        log = (self.log_dir / "haproxy.log").open("ab")
        self.haproxy = subprocess.Popen(
            [HAPROXY, "-db", "-f", str(CONFIG)],
            env={
                **os.environ,
                "HAPROXY_BIND": f"127.0.0.1:{bind}",
                "APP1": f"127.0.0.1:{self.ports[0]}",
                "APP2": f"127.0.0.1:{self.ports[1]}",
            },
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        time.sleep(BACK_IN_POOL)
        assert requests.get(self.url + "/healthz", timeout=5).status_code == 200
        return self

    def rolling_restart(self, port: int) -> float:
        """SIGTERM, wait for the drain and the exit, start again on the same port, wait until in the pool."""
        began = time.monotonic()
        process = self.servers[port]
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=DRAIN_SECONDS + 20)
        self.start_server(port)
        time.sleep(BACK_IN_POOL)
        return time.monotonic() - began

    def kill(self, port: int) -> None:
        os.killpg(self.servers[port].pid, signal.SIGKILL)
        self.servers[port].wait(timeout=10)

    def log_tail(self, port: int | str, lines: int = 60) -> str:
        path = self.log_dir / (f"gunicorn-{port}.log" if isinstance(port, int) else port)
        with contextlib.suppress(OSError):
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        for process in [*self.servers.values(), *([self.haproxy] if self.haproxy else [])]:
            stop(process)


@pytest.fixture
def fleet(_postgres_only_guard, tmp_path):
    if not Path(HAPROXY).exists():
        pytest.fail("haproxy is not installed (apt-get install haproxy; .ci/run does)")
    env = server_environment(
        database_url(connection.settings_dict),
        OAUTH_SIGNING_KEY_ENCRYPTION_KEY="fleet-" + secrets.token_urlsafe(32),
        REDIS_URL=os.environ.get("FLEET_REDIS_URL", "redis://127.0.0.1:6379/0"),
        GUNICORN_DRAIN_SECONDS=str(DRAIN_SECONDS),
        OAUTH_AUTHORIZATION_CODE_LIFETIME="300",
    )
    fleet = Fleet(env, tmp_path)
    try:
        fleet.start()
        env["OAUTH_ISSUER"] = fleet.url
        yield fleet
    except BaseException:
        print(fleet.log_tail("haproxy.log"))
        raise
    finally:
        fleet.stop()


class Load:
    """CLIENTS threads, each: authorize (consent page + Allow), exchange, refresh, introspect."""

    def __init__(self, fleet: Fleet, app, secret: str, browsers, *, retry_cut_off: bool):
        self.fleet, self.app, self.secret, self.browsers = fleet, app, secret, browsers
        self.retry_cut_off = retry_cut_off
        self.tally = Tally()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._loop, args=(b,), daemon=True) for b in browsers]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=TIMEOUT * 3)

    def _call(self, kind, call):
        try:
            response = call()
        except requests.RequestException as exc:
            return type(exc).__name__, None
        return response.status_code, response

    def _redeem(self, kind, call, on_lost):
        """One token request; if cut off (and retrying), its retry decides (module docstring)."""
        status, response = self._call(kind, call)
        if status == 200:
            self.tally.add(kind, 200, True)
            return response.json()
        if not self.retry_cut_off or not (status in CUT_OFF or response is None):
            self.tally.add(kind, status, False)
            return None
        self.tally.add(kind, status, True)  # cut off by the kill: the retry below accounts for it
        with self.tally.lock:
            self.tally.retried[kind] += 1
        time.sleep(0.3)
        status, response = self._call(kind, call)
        if status == 200:
            self.tally.add(kind + " retry", 200, True)
            return response.json()
        lost = status == 400 and response.json().get("error") == "invalid_grant"
        self.tally.add(kind + " retry", status if not lost else "invalid_grant", lost)
        if lost:
            on_lost()
        return None

    def _loop(self, browser):
        url = self.fleet.url
        while not self.stopping.is_set():
            try:
                code = authorize(browser, url, self.app)
            except (AssertionError, requests.RequestException) as exc:
                cut_off = self.retry_cut_off and (
                    "502" in str(exc)
                    or "503" in str(exc)
                    or "504" in str(exc)
                    or isinstance(exc, requests.RequestException)
                )
                self.tally.add("authorize", f"{type(exc).__name__}: {str(exc)[:80]}", cut_off)
                continue
            self.tally.add("authorize", 200, True)
            tokens = self._redeem(
                "exchange", lambda code=code: exchange(url, self.app, self.secret, code), self._lost_exchange
            )
            if tokens is None:
                continue
            with self.tally.lock:
                self.tally.exchanged += 1
            rotated = self._redeem(
                "refresh",
                lambda tokens=tokens: refresh(url, self.app.client_id, self.secret, tokens["refresh_token"]),
                self._lost_refresh,
            )
            if rotated is None:
                continue
            with self.tally.lock:
                self.tally.refreshed += 1
            status, response = self._call(
                "introspect",
                lambda rotated=rotated: requests.post(
                    url + "/v2/auth/oauth2/introspect",
                    data={"token": rotated["access_token"]},
                    auth=(self.app.client_id, self.secret),
                    timeout=TIMEOUT,
                ),
            )
            active = status == 200 and response.json().get("active") is True
            self.tally.add("introspect", status, active or (self.retry_cut_off and status in (*CUT_OFF, None)))

    def _lost_exchange(self):
        with self.tally.lock:
            self.tally.exchange_lost += 1

    def _lost_refresh(self):
        with self.tally.lock:
            self.tally.refresh_lost += 1


@pytest.fixture
def cast(transactional_db):
    owner = make_server_user("fleetowner")
    created = make_client(owner, redirect_uris=["http://localhost:8765/cb"], scopes=["PROFILE_READ"], approve=True)
    users = [make_server_user(f"fleetuser{n}") for n in range(CLIENTS)]
    return created.client, created.secret.plaintext, users


def _browsers(fleet, users):
    return [login(fleet.url, user.username) for user in users]


def test_a_rolling_restart_costs_no_request(fleet, cast):
    app, secret, users = cast
    with Load(fleet, app, secret, _browsers(fleet, users), retry_cut_off=False) as load:
        time.sleep(2)
        took = [fleet.rolling_restart(port) for port in fleet.ports]
        time.sleep(2)
    tally = load.tally
    print("\n".join(line for line in fleet.log_tail("haproxy.log", 100000).splitlines() if "is " in line)[-3000:])
    print(
        f"\nrolling restart of 2 servers ({', '.join(f'{t:.1f} s' for t in took)}): {tally.requests} requests, "
        f"{len(tally.failures)} failed; {dict(tally.statuses)}"
    )
    assert tally.failures == [], tally.failures[:20]
    assert tally.statuses[("exchange", 200)] >= 10 and tally.statuses[("introspect", 200)] >= 10


def test_a_server_killed_mid_load_loses_only_its_requests_in_flight(fleet, cast):
    app, secret, users = cast
    with Load(fleet, app, secret, _browsers(fleet, users), retry_cut_off=True) as load:
        time.sleep(2)
        fleet.kill(fleet.ports[0])
        killed_at = time.monotonic()
        time.sleep(3)
        # Back, as an orchestrator would restart it.
        fleet.start_server(fleet.ports[0])
        time.sleep(BACK_IN_POOL + 1)
    tally = load.tally
    cut_off = sum(n for (kind, status), n in tally.statuses.items() if status != 200 and "retry" not in kind)
    print(
        f"\nSIGKILL of 1 of 2 servers: {tally.requests} requests, {cut_off} cut off, retried {dict(tally.retried)}: "
        f"{tally.exchange_lost} exchanges and {tally.refresh_lost} refreshes had committed (invalid_grant on retry); "
        f"{len(tally.failures)} unexpected; {dict(tally.statuses)}"
    )
    assert killed_at
    assert tally.failures == [], tally.failures[:20]

    # Every redeemed code is exactly one 200 or one committed-then-cut-off exchange.
    redeemed = Grant.objects.filter(used_at__isnull=False).count()
    assert redeemed == tally.exchanged + tally.exchange_lost
    # Every refresh token was made by exactly one redemption or rotation, and every rotated one by one
    # refresh that answered 200 or committed before the cut.
    assert RefreshToken.objects.count() == redeemed + tally.refreshed + tally.refresh_lost
    assert RefreshToken.objects.filter(revoked__isnull=False).count() == tally.refreshed + tally.refresh_lost
    # Nothing was revoked as a replay: the retries came within the grace.
    assert not ClientAuditEvent.objects.filter(action=AuditAction.FAMILY_REVOKED).exists()
