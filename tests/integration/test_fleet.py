"""A fleet: two gunicorn servers (config/gunicorn.py, two workers each) behind Debian's HAProxy
(docs/haproxy.cfg, used as written), on PostgreSQL and Redis, under a load of authorize + exchange
+ refresh + introspection from several clients at once.

- A rolling restart (each server in turn: SIGTERM, the readiness drain, a new server on the same
  port, ready) costs no request at all.
- A server SIGKILLed mid-load loses only the requests in flight on it. Each cut-off exchange or
  refresh is retried once, as a client would: it succeeds if its transaction did not commit, and
  answers invalid_grant if it did (single use holds), and the client starts a new authorization.
  What the retry does then differs (docs/choices.md): a refresh token presented again within
  OAUTH_REPLAY_GRACE_SECONDS revokes nothing, while a code presented again revokes the pair its
  first redemption produced (RFC 9700 §4.5: a code is strictly single use; the client never got
  that pair anyway). Counted in the database afterwards: every redeemed code and every rotated
  refresh token is accounted for by exactly one answer, nothing twice. A cut-off introspection (a
  read) is retried once and must answer active. "Cut off" is a 502/503/504 from HAProxy or no
  answer at all: a connection closed, or a body cut short when the server died mid-write.

Whether a kill lands before or after a commit is chance, so once the server is back each branch
is made to happen on purpose: the servers run under tests/integration/gunicorn_faults.py
(config/gunicorn.py plus tests/integration/faults.py), and one exchange and one refresh each make
their worker SIGKILL itself after the response was built and the transaction committed, before a
byte is written (then the retry answers invalid_grant and the checks below prove the redemption
happened exactly once, by the cut-off request), and one of each is cut off before the application
sees it (the retry succeeds, and the same checks fail on it: they tell the two branches apart).

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
from datetime import datetime
from pathlib import Path

import pytest
import requests
from django.db import connection
from django.utils import timezone

from oauthclients.models import AccessToken, AuditAction, ClientAuditEvent, Grant, RefreshToken, digest
from tests.factories import make_client
from tests.integration import faults
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
FLEET_CONFIG = "tests/integration/gunicorn_faults.py"  # config/gunicorn.py plus tests/integration/faults.py
# The cut-offs made on purpose, one at a time, in this order. The refresh first, while every worker
# serves: its retry must be served within OAUTH_REPLAY_GRACE_SECONDS of the commit, and a killed
# worker takes seconds to boot again.
FAULTS = [
    ("refresh", faults.KILL_AFTER_COMMIT),
    ("exchange", faults.KILL_AFTER_COMMIT),
    ("exchange", faults.CUT_BEFORE),
    ("refresh", faults.CUT_BEFORE),
]
CODE_REPLAYED = "authorization code replayed"  # oauthflows.token.oauth2.Validator.validate_code's audit reason
NOT_BY_THE_CUT_OFF = "not committed by the cut-off request"


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


@dataclass
class Injected:
    """One token request marked for a fault (tests/integration/faults.py), and what came of it."""

    kind: str  # "exchange" or "refresh"
    mode: str
    credential: str = field(repr=False)  # the code or refresh token presented (never printed)
    sent_at: datetime | None = None
    first: object = None  # the marked request's status (HAProxy's 502: the worker died)
    retried_at: datetime | None = None
    retry: object = None  # the retry's status, or "invalid_grant"
    answered_at: datetime | None = None


class Fleet:
    def __init__(self, env: dict, log_dir: Path):
        self.env = env
        self.log_dir = log_dir
        self.ports = [free_port(), free_port()]
        self.servers: dict[int, subprocess.Popen] = {}
        self.haproxy: subprocess.Popen | None = None
        self.url = ""
        self.fault_token = env[faults.TOKEN_VARIABLE]
        self.log_starts: dict[int, int] = {}  # where each server's current run begins in its log

    def start_server(self, port: int) -> None:
        log = (self.log_dir / f"gunicorn-{port}.log").open("ab")
        self.log_starts[port] = log.tell()
        self.servers[port] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                FLEET_CONFIG,
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
            env={**self.env, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="prometheus-", dir=self.log_dir)},
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

    def wait_in_pool(self, port: int, timeout: float = 30) -> None:
        """Until HAProxy's last word on this server (its log: "Server app/appN is UP|DOWN") is UP."""
        name = f"Server app/app{self.ports.index(port) + 1} is "
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            said = [line for line in self.log_tail("haproxy.log", 100000).splitlines() if name in line]
            if not said or said[-1].split(name, 1)[1].startswith("UP"):
                return
            time.sleep(0.2)
        raise AssertionError(f"app on {port} not back in HAProxy's pool:\n{self.log_tail('haproxy.log')}")

    def kill(self, port: int) -> None:
        os.killpg(self.servers[port].pid, signal.SIGKILL)
        self.servers[port].wait(timeout=10)

    def wait_until_loaded(self, timeout: float = 30) -> None:
        """Until every worker the servers have forked has loaded the application (tests/integration/faults.py)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            logs = [
                (self.log_dir / f"gunicorn-{port}.log").read_bytes()[self.log_starts[port] :] for port in self.ports
            ]
            if all(log.count(faults.BOOTING.encode()) == log.count(faults.LOADED.encode()) for log in logs):
                return
            time.sleep(0.2)
        raise AssertionError("workers still loading:\n" + "\n".join(self.log_tail(port) for port in self.ports))

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
        **{faults.TOKEN_VARIABLE: secrets.token_urlsafe(16)},
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

    def __init__(self, fleet: Fleet, server_app, secret: str, browsers, *, retry_cut_off: bool):
        self.fleet, self.app, self.secret, self.browsers = fleet, server_app, secret, browsers
        self.retry_cut_off = retry_cut_off
        self.tally = Tally()
        self.pending_faults: list[tuple[str, str]] = []
        self.injected: list[Injected] = []
        self.fault_in_flight = False
        self.faults_done = threading.Event()
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

    def _call(self, call):
        try:
            response = call()
        except requests.RequestException as exc:
            return type(exc).__name__, None
        return response.status_code, response

    def inject(self, plan) -> threading.Event:
        """(kind, mode) pairs: each marks the next exchange or refresh of that kind, one at a time, in
        order (tests/integration/faults.py). `injected` holds what came of them; the event is set
        after the last one's retry."""
        with self.tally.lock:
            self.pending_faults = list(plan)
            self.faults_done.clear()
        return self.faults_done

    def _fault_for(self, kind: str, credential: str) -> Injected | None:
        with self.tally.lock:
            if self.fault_in_flight or not self.pending_faults or self.pending_faults[0][0] != kind:
                return None
            _, mode = self.pending_faults.pop(0)
            self.fault_in_flight = True
            injected = Injected(kind, mode, credential)
            self.injected.append(injected)
            return injected

    def _fault_over(self, injected: Injected) -> None:
        injected.answered_at = timezone.now()
        with self.tally.lock:
            self.fault_in_flight = False
            if not self.pending_faults:
                self.faults_done.set()

    def _redeem(self, kind, send, credential, on_lost):
        """One token request, `send(headers)`, marked if a fault of its kind is due; if cut off
        (and retrying), its retry decides (module docstring)."""
        injected = self._fault_for(kind, credential)
        try:
            return self._redeem_once(kind, send, on_lost, injected)
        finally:
            if injected is not None:
                self._fault_over(injected)

    def _redeem_once(self, kind, send, on_lost, injected: Injected | None):
        headers = None
        if injected is not None:
            headers = faults.mark(injected.mode, self.fleet.fault_token)
            injected.sent_at = timezone.now()
        status, response = self._call(lambda: send(headers))
        if injected is not None:
            injected.first = status
        if status == 200:
            self.tally.add(kind, 200, True)
            return response.json()
        if not self._cut_off_to_retry(kind, status, response):
            return None
        if injected is not None:
            injected.retried_at = timezone.now()
        status, response = self._call(lambda: send(None))
        lost = status == 400 and response.json().get("error") == "invalid_grant"
        if injected is not None:
            injected.retry = "invalid_grant" if lost else status
        if status == 200:
            self.tally.add(kind + " retry", 200, True)
            return response.json()
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
                "exchange",
                lambda headers, code=code: exchange(url, self.app, self.secret, code, headers=headers),
                code,
                self._lost_exchange,
            )
            if tokens is None:
                continue
            with self.tally.lock:
                self.tally.exchanged += 1
            rotated = self._redeem(
                "refresh",
                lambda headers, tokens=tokens: refresh(
                    url, self.app.client_id, self.secret, tokens["refresh_token"], headers=headers
                ),
                tokens["refresh_token"],
                self._lost_refresh,
            )
            if rotated is None:
                continue
            with self.tally.lock:
                self.tally.refreshed += 1
            self._introspect(rotated["access_token"])

    def _introspect(self, access_token: str) -> None:
        """An introspection is a read: one cut off (an answer from the proxy for the killed server,
        or no answer at all) is tried again, and the retry must find the token active."""

        def send():
            return requests.post(
                self.fleet.url + "/v2/auth/oauth2/introspect",
                data={"token": access_token},
                auth=(self.app.client_id, self.secret),
                timeout=TIMEOUT,
            )

        def active(status, response) -> bool:
            return status == 200 and response.json().get("active") is True

        status, response = self._call(send)
        if active(status, response):
            self.tally.add("introspect", 200, True)
        elif self._cut_off_to_retry("introspect", status, response):
            status, response = self._call(send)
            self.tally.add("introspect retry", status, active(status, response))

    def _cut_off_to_retry(self, kind: str, status, response) -> bool:
        """After a request that did not answer 200: True if the kill cut it off (HAProxy's 502/503/504,
        or no answer at all) and cut-offs are retried, counted as such, after a pause; else it is
        counted as a failure and False."""
        if not self.retry_cut_off or not (status in CUT_OFF or response is None):
            self.tally.add(kind, status, False)
            return False
        self.tally.add(kind, status, True)  # cut off by the kill: the retry accounts for it
        with self.tally.lock:
            self.tally.retried[kind] += 1
        time.sleep(0.3)
        return True

    def _lost_exchange(self):
        with self.tally.lock:
            self.tally.exchange_lost += 1

    def _lost_refresh(self):
        with self.tally.lock:
            self.tally.refresh_lost += 1


def _between(moment, after: datetime, before: datetime) -> bool:
    return moment is not None and after <= moment < before


def exchange_committed_then_lost(server_app, injected: Injected) -> None:
    """The cut-off exchange redeemed its code, exactly once, before its retry was sent; the retry,
    a second presentation, answered invalid_grant and revoked the pair the first produced."""
    grant = Grant.objects.get(code=digest(injected.credential), application=server_app)
    assert _between(grant.used_at, injected.sent_at, injected.retried_at), (
        f"the code was {NOT_BY_THE_CUT_OFF} (used at {grant.used_at}, sent {injected.sent_at}, "
        f"retried {injected.retried_at})"
    )
    # Exactly one pair was made from it: the only one this user's thread could have made meanwhile.
    made = RefreshToken.objects.filter(
        application=server_app, user=grant.user, created__gte=injected.sent_at, created__lt=injected.retried_at
    )
    assert made.count() == 1, made.count()
    pair = made.get()
    # RFC 9700 §4.5: the retry revoked it (oauthflows.token.oauth2.Validator.validate_code)...
    assert _between(pair.revoked, injected.retried_at, injected.answered_at), pair.revoked
    assert pair.access_token_id is None
    assert not AccessToken.objects.filter(
        application=server_app, user=grant.user, created__gte=injected.sent_at, created__lt=injected.retried_at
    ).exists()
    assert grant.token_family is None  # ...cleared from the code, so that a third presentation finds nothing
    assert not RefreshToken.objects.filter(token_family=pair.token_family, revoked__isnull=True).exists()
    replayed = ClientAuditEvent.objects.filter(
        client=server_app,
        user=grant.user,
        action=AuditAction.FAMILY_REVOKED,
        created__gte=injected.retried_at,
        created__lt=injected.answered_at,
    )
    assert [event.detail.get("reason") for event in replayed] == [CODE_REPLAYED]


def refresh_committed_then_lost(server_app, injected: Injected) -> None:
    """The cut-off refresh rotated its token, exactly once, before its retry was sent; the retry,
    within OAUTH_REPLAY_GRACE_SECONDS, answered invalid_grant and revoked nothing."""
    presented = RefreshToken.objects.get(token_checksum=digest(injected.credential), application=server_app)
    assert _between(presented.revoked, injected.sent_at, injected.retried_at), (
        f"the rotation was {NOT_BY_THE_CUT_OFF} (revoked at {presented.revoked}, sent {injected.sent_at}, "
        f"retried {injected.retried_at})"
    )
    successors = RefreshToken.objects.filter(token_family=presented.token_family).exclude(pk=presented.pk)
    assert successors.count() == 1, successors.count()  # rotated once: the family is the code's pair and this
    successor = successors.get()
    assert _between(successor.created, injected.sent_at, injected.retried_at), successor.created
    # Within the grace nothing was revoked: the new pair lives on, although its answer was lost.
    assert successor.revoked is None and successor.access_token_id is not None
    assert not ClientAuditEvent.objects.filter(
        client=server_app,
        user=presented.user,
        action=AuditAction.FAMILY_REVOKED,
        created__gte=injected.sent_at,
        created__lt=injected.answered_at,
    ).exists()


COMMITTED_THEN_LOST = {"exchange": exchange_committed_then_lost, "refresh": refresh_committed_then_lost}


@pytest.fixture
def app_and_users(transactional_db):
    owner = make_server_user("fleetowner")
    created = make_client(owner, redirect_uris=["http://localhost:8765/cb"], scopes=["PROFILE_READ"], approve=True)
    users = [make_server_user(f"fleetuser{n}") for n in range(CLIENTS)]
    return created.client, created.secret.plaintext, users


def _browsers(fleet, users):
    return [login(fleet.url, user.username) for user in users]


def test_a_rolling_restart_costs_no_request(fleet, app_and_users):
    app, secret, users = app_and_users
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


def test_a_server_killed_mid_load_loses_only_its_requests_in_flight(fleet, app_and_users):
    app, secret, users = app_and_users
    with Load(fleet, app, secret, _browsers(fleet, users), retry_cut_off=True) as load:
        time.sleep(2)
        fleet.kill(fleet.ports[0])
        time.sleep(3)
        # Back, as an orchestrator would restart it.
        fleet.start_server(fleet.ports[0])
        # Then each branch on purpose (module docstring), once HAProxy sends to it again and every
        # worker serves.
        time.sleep(BACK_IN_POOL)
        fleet.wait_in_pool(fleet.ports[0])
        fleet.wait_until_loaded()
        assert load.inject(FAULTS).wait(timeout=60), load.injected
    tally = load.tally
    cut_off = sum(n for (kind, status), n in tally.statuses.items() if status != 200 and "retry" not in kind)
    print(
        f"\nSIGKILL of 1 of 2 servers, then {len(load.injected)} token requests cut off on purpose: {tally.requests} "
        f"requests, {cut_off} cut off, retried {dict(tally.retried)}: {tally.exchange_lost} exchanges and "
        f"{tally.refresh_lost} refreshes had committed (invalid_grant on retry); {len(tally.failures)} unexpected; "
        f"{dict(tally.statuses)}; injected {load.injected}"
    )
    assert tally.failures == [], tally.failures[:20]

    # The branches made on purpose: each marked request was cut off (HAProxy's 502: its worker died
    # without a word), and its retry answered as its commit decides.
    assert [(injected.kind, injected.mode) for injected in load.injected] == FAULTS
    for injected in load.injected:
        assert injected.first == 502, injected
        if injected.mode == faults.KILL_AFTER_COMMIT:
            assert injected.retry == "invalid_grant", injected
            COMMITTED_THEN_LOST[injected.kind](app, injected)
        else:
            # Cut off before anything was committed: the retry was the first redemption, and the
            # committed-then-lost checks refuse it.
            assert injected.retry == 200, injected
            with pytest.raises(AssertionError, match=NOT_BY_THE_CUT_OFF):
                COMMITTED_THEN_LOST[injected.kind](app, injected)
    assert tally.exchange_lost >= 1 and tally.refresh_lost >= 1

    # Every redeemed code is exactly one 200 or one committed-then-cut-off exchange.
    redeemed = Grant.objects.filter(used_at__isnull=False).count()
    assert redeemed == tally.exchanged + tally.exchange_lost
    # Every refresh token was made by exactly one redemption or rotation, and every rotated one by one
    # refresh that answered 200 or committed before the cut.
    assert RefreshToken.objects.count() == redeemed + tally.refreshed + tally.refresh_lost
    # Revoked: each rotated one, and the pair of each code whose exchange committed and was retried.
    assert RefreshToken.objects.filter(revoked__isnull=False).count() == (
        tally.refreshed + tally.refresh_lost + tally.exchange_lost
    )
    assert Grant.objects.filter(used_at__isnull=False, token_family__isnull=True).count() == tally.exchange_lost
    # The only revocations are those code replays: the refresh retries came within the grace.
    reasons = Counter(
        event.detail.get("reason") for event in ClientAuditEvent.objects.filter(action=AuditAction.FAMILY_REVOKED)
    )
    assert reasons == Counter({CODE_REPLAYED: tally.exchange_lost})
