"""The load: locust users, one class per scenario, against the targets of a plan.

Run by bench/run.py as `locust -f bench/locustfile.py --headless ... <UserClass>`, configured by:

- BENCH_PLAN     JSON list of targets, each {"label", "target" (project | floor | stock), "host",
                 "seed" (the seed JSON from bench/seed.py), "pids" (the server's gunicorn
                 workers), "database" (its PostgreSQL database)};
- BENCH_CODES    JSON {seed path: [first, end)}: the seeded authorization codes this run may use;
- BENCH_PHASE    seconds per phase: with several targets, every user works on the first target
                 for one phase, then the next, and so on round the plan, so the targets share
                 the machine's conditions second by second (other jobs come and go);
- BENCH_WARMUP   seconds of load before measuring starts (rounded up to whole rounds of phases);
- BENCH_OUT      where to write the results (JSON).

A request or flow belongs to the target of the phase in which it started. Every request of the
measured window is recorded from locust's request event (exact latencies, not locust's rounded
buckets) with its X-DB-Queries and X-DB-Round-Trips headers (bench.middleware). At every phase boundary the CPU time
used so far by the gunicorn workers and by the PostgreSQL backends of the plan's databases is
read from /proc: what was used during a phase is charged to that phase's target, which gives
CPU per request independently of how much of the machine other jobs were taking.
"""

import base64
import contextlib
import html
import itertools
import json
import math
import os
import random
import re
import secrets
import string
import time
from collections import Counter, defaultdict
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import gevent
from locust import FastHttpUser, constant, events, task
from locust.exception import StopUser

from bench.common import (
    EXCHANGE_RESOURCE,
    ROUTES,
    TOTP_PERIOD,
    code_value,
    request_stats,
    token_value,
    totp_code,
    totp_period,
)

PLAN = json.loads(os.environ["BENCH_PLAN"])
PHASE = float(os.environ.get("BENCH_PHASE", "2"))
ROUND = PHASE * len(PLAN)
WARMUP = math.ceil(float(os.environ.get("BENCH_WARMUP", "3")) / ROUND) * ROUND
SEEDS = {}
for _entry in PLAN:
    if _entry["seed"] not in SEEDS:
        with open(_entry["seed"]) as _fh:
            SEEDS[_entry["seed"]] = json.load(_fh)

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HIDDEN_INPUT_RE = re.compile(r'<input type="hidden" name="([^"]+)"(?: value="([^"]*)")?')
SESSION_COOKIE_RE = re.compile(r"sessionid=([^;,\s]+)")
QUERIES_HEADER = "X-DB-Queries"
ROUND_TRIPS_HEADER = "X-DB-Round-Trips"


class Codes:
    """The seeded authorization codes of each database, handed out in order."""

    def __init__(self, ranges: dict[str, list[int]]):
        self.next = {seed: first for seed, (first, _end) in ranges.items()}
        self.end = {seed: end for seed, (_first, end) in ranges.items()}

    def take(self, seed: str) -> str:
        number = self.next[seed]
        if number >= self.end[seed]:
            raise StopUser("ran out of seeded authorization codes (raise BENCH_CODES)")
        self.next[seed] = number + 1
        return code_value(number)


codes = Codes(json.loads(os.environ.get("BENCH_CODES", "{}")))


class Clock:
    """Which target's phase it is, and how long each target's phases lasted within a window."""

    def __init__(self):
        self.zero = time.monotonic()

    def index(self) -> int:
        return int((time.monotonic() - self.zero) // PHASE) % len(PLAN)

    def time_of(self, index: int, start: float, end: float) -> float:
        total = 0.0
        for phase in range(int((start - self.zero) // PHASE), int((end - self.zero) // PHASE) + 1):
            if phase % len(PLAN) == index:
                begins = self.zero + phase * PHASE
                total += max(0.0, min(end, begins + PHASE) - max(start, begins))
        return total


clock = Clock()
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int) -> int:
    """User + system CPU of a process so far, in clock ticks (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rpartition(")")[2].split()
        return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)
    except (OSError, IndexError, ValueError):
        return 0


def _postgres_backends(databases: set[str]) -> list[int]:
    """The PostgreSQL server processes serving these databases ("postgres: user db host(port) ...")."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                    title = fh.read().decode(errors="replace").split()
            except OSError:
                continue
            # "postgres: [15/main: ]user database host(port) state": the database is a word of its own
            if title and title[0] == "postgres:" and databases.intersection(title[1:5]):
                pids.append(int(entry.name))
    return pids


class CpuMeter:
    """CPU (ms) of the servers' workers and of their PostgreSQL backends, charged phase by phase.

    With BENCH_CPU_BY_SERVER=1 (targets on servers of their own: the trial "Django's default hasher"),
    each server's workers are charged to their own target, phase or not: a login there takes longer
    than a phase, and the requests still running at a phase's end would otherwise be charged to
    the next target's phase. PostgreSQL's backends are charged phase by phase as always."""

    BY_SERVER = os.environ.get("BENCH_CPU_BY_SERVER") == "1"

    def __init__(self):
        self.workers = sorted({pid for entry in PLAN for pid in entry.get("pids", [])})
        self.pids = {entry["label"]: set(entry.get("pids", [])) for entry in PLAN}
        if self.BY_SERVER and sum(map(len, self.pids.values())) != len(self.workers):
            raise ValueError("BENCH_CPU_BY_SERVER: the targets share a server")
        self.databases = {entry["database"] for entry in PLAN if entry.get("database")}
        self.app = Counter()  # label -> ms
        self.db = Counter()
        self.seconds = Counter()  # label -> seconds of phases charged

    def read(self) -> tuple[dict, dict]:
        """CPU ticks so far, per process: the workers, and the backends of the plan's databases."""
        return (
            {pid: _cpu_ticks(pid) for pid in self.workers},
            {pid: _cpu_ticks(pid) for pid in _postgres_backends(self.databases)},
        )

    @staticmethod
    def used_ms(previous: dict, current: dict) -> float:
        # Per process, so that a backend that came or went during the phase (a persistent
        # connection reaching its maximum age) neither subtracts its past nor is missed.
        return sum(ticks - previous.get(pid, 0) for pid, ticks in current.items()) * TICK_MS

    def run(self):
        """From the start of measuring, at each phase boundary, charge the phase that just ended."""
        previous = self.read()
        phase = round((time.monotonic() - clock.zero) / PHASE)
        while recorder.measuring:
            gevent.sleep(max(0.0, clock.zero + (phase + 1) * PHASE - time.monotonic()))
            if not recorder.measuring:
                break
            current = self.read()
            label = PLAN[phase % len(PLAN)]["label"]
            if self.BY_SERVER:
                for each, pids in self.pids.items():
                    mine = {pid: ticks for pid, ticks in current[0].items() if pid in pids}
                    self.app[each] += self.used_ms(previous[0], mine)
            else:
                self.app[label] += self.used_ms(previous[0], current[0])
            self.db[label] += self.used_ms(previous[1], current[1])
            self.seconds[label] += PHASE
            previous, phase = current, phase + 1


cpu = CpuMeter()


class Recorder:
    """What happened in the measured window: latencies, failures and query counts per target and name."""

    def __init__(self):
        self.start(measuring=False)

    def start(self, *, measuring: bool):
        self.measuring = measuring
        self.started = time.monotonic()
        self.latencies = defaultdict(list)
        self.failures = Counter()
        self.queries = defaultdict(list)
        self.round_trips = defaultdict(list)

    def summary(self) -> dict:
        """Per target and request name: the statistics and the raw samples (bench/run.py merges runs)."""
        ended = time.monotonic()
        labels = {}
        for index, entry in enumerate(PLAN):
            seconds = clock.time_of(index, self.started, ended)
            names = sorted(name for label, name in self.latencies if label == entry["label"])
            labels[entry["label"]] = {
                "measured_s": seconds,
                "cpu": {
                    "app_ms": cpu.app[entry["label"]],
                    "db_ms": cpu.db[entry["label"]],
                    "seconds": cpu.seconds[entry["label"]],
                },
                "requests": {
                    name: {
                        **request_stats(
                            self.latencies[entry["label"], name],
                            self.queries[entry["label"], name],
                            self.failures[entry["label"], name],
                            seconds,
                            self.round_trips[entry["label"], name],
                        ),
                        "raw": {
                            "latencies": self.latencies[entry["label"], name],
                            "queries": self.queries[entry["label"], name],
                        },
                    }
                    for name in names
                },
            }
        return {"labels": labels, "codes_next": codes.next}


recorder = Recorder()


@events.request.add_listener
def _record(request_type, name, response_time, response_length, response=None, exception=None, **kwargs):
    if not recorder.measuring:
        return
    label, _, name = name.partition(" | ")
    recorder.latencies[label, name].append(response_time)
    if exception is not None:
        recorder.failures[label, name] += 1
    headers = getattr(response, "headers", None)
    value = headers.get(QUERIES_HEADER) if headers is not None else None
    if value is not None:
        recorder.queries[label, name].append(int(value))
    value = headers.get(ROUND_TRIPS_HEADER) if headers is not None else None
    if value is not None:
        recorder.round_trips[label, name].append(int(value))


@events.test_start.add_listener
def _warm_up_then_measure(environment, **kwargs):
    global clock
    clock = Clock()

    def measure():
        gevent.sleep(max(0.0, clock.zero + WARMUP - time.monotonic()))
        environment.stats.reset_all()
        recorder.start(measuring=True)
        cpu.run()

    gevent.spawn(measure)


@events.test_stop.add_listener
def _write_results(environment, **kwargs):
    if not recorder.measuring:
        return
    summary = recorder.summary()
    recorder.measuring = False
    out = os.environ.get("BENCH_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(summary, fh)


class FlowFailed(Exception):
    pass


class Target:
    """One plan entry as a user sees it: where to send requests and with which seeded data."""

    def __init__(self, entry: dict):
        self.label, self.kind, self.host = entry["label"], entry["target"], entry["host"].rstrip("/")
        self.seed_path = entry["seed"]
        self.seed = SEEDS[self.seed_path]
        self.routes = ROUTES[entry.get("routes", self.kind)]
        # The seeded codes this target exchanges: bound to the JWT resource server for "jwt".
        self.code_key = self.seed_path + ("#jwt" if self.kind == "jwt" else "")
        # Scenario 9: the seed's accounts this target signs in (a trial's hasher has its own). Stock
        # DOT's seed has none: it is never asked to sign anyone in.
        self.login_users = self.seed.get(entry.get("login_users") or "login_users", [])

    def url(self, route: str) -> str:
        return self.host + self.routes[route]

    def name(self, request: str) -> str:
        return f"{self.label} | {request}"


TARGETS = [Target(entry) for entry in PLAN]
_user_numbers = itertools.count()


class BenchUser(FastHttpUser):
    abstract = True
    host = PLAN[0]["host"]
    wait_time = constant(0)  # closed loop: each user sends its next request as soon as it has an answer
    network_timeout = 60.0
    connection_timeout = 60.0

    def on_start(self):
        # Cookies are sent by hand (a seeded session, a CSRF cookie of our own), never from a jar.
        self.client.client.cookiejar = None
        self.number = next(_user_numbers)
        self.csrf_secret = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))

    @staticmethod
    def target() -> Target:
        return TARGETS[clock.index()]

    def session_key(self, target: Target) -> str:
        return target.seed["sessions"][self.number % len(target.seed["sessions"])]

    def token_request(self, target: Target, params: dict, request: str) -> dict:
        """POST to the token endpoint (client_secret_post); the new tokens, or FlowFailed."""
        body = urlencode(
            {**params, "client_id": target.seed["client_id"], "client_secret": target.seed["client_secret"]}
        )
        with self.client.post(
            target.url("token"), data=body, headers=FORM, name=target.name(request), catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {(response.text or '')[:200]}")
                raise FlowFailed(request)
            return response.json()

    def exchange(self, target: Target, code: str, request: str) -> dict:
        params = {"grant_type": "authorization_code", "code": code, "redirect_uri": target.seed["redirect_uri"]}
        return self.token_request(target, params, request)


class EmptyUser(BenchUser):
    """Scenario 0, the framework floor: an empty Django view (floor) and an empty DRF view (project)."""

    @task
    def empty(self):
        target = self.target()
        self.client.get(target.url("empty"), name=target.name("0 empty"))


class MeUser(BenchUser):
    """Scenario 1: GET /v2/me with a valid bearer token, picked at random among all seeded ones."""

    @task
    def me(self):
        target = self.target()
        token = token_value(random.randrange(target.seed["tokens"]))
        self.client.get(target.url("me"), headers={"Authorization": f"Bearer {token}"}, name=target.name("1 me"))


class CorsUser(BenchUser):
    """Scenario 8: a single-page app's CORS preflight and GET /v2/me from its approved origin, and
    a preflight from the origin of a self-registered client picked at random (in the database
    without them, an origin nobody registered): each an Origin that CORS looks up."""

    @task
    def cors(self):
        target = self.target()
        spa = target.seed["spa_origin"]
        stranger = f"https://agent-{random.randrange(100_000)}.{target.seed.get('registered_domain', 'bench.example')}"
        for origin, name in ((stranger, "8 cors preflight (self-registered origin)"), (spa, "8 cors preflight")):
            with self.client.options(
                target.url("me"),
                headers={
                    "Origin": origin,
                    "Access-Control-Request-Method": "GET",
                    "Access-Control-Request-Headers": "authorization",
                },
                name=target.name(name),
                catch_response=True,
            ) as response:
                allowed = response.headers.get("Access-Control-Allow-Origin")
                # /v2/me answers approved apps' origins only (oauthflows/cors.py).
                if response.status_code != 200 or allowed != (spa if origin == spa else None):
                    response.failure(f"HTTP {response.status_code}, Access-Control-Allow-Origin {allowed!r}")
        token = token_value(random.randrange(target.seed["tokens"]))
        with self.client.get(
            target.url("me"),
            headers={"Authorization": f"Bearer {token}", "Origin": spa},
            name=target.name("8 cors"),
            catch_response=True,
        ) as response:
            if response.status_code != 200 or response.headers.get("Access-Control-Allow-Origin") != spa:
                response.failure(f"HTTP {response.status_code}: {(response.text or '')[:200]}")


class LoginUser(BenchUser):
    """Scenario 9: a person's password login: the login page (GET), then the form posted with a
    seeded user's username and password (the password hasher's cost included), answered 302."""

    @task
    def login(self):
        target = self.target()
        username = target.login_users[self.number % len(target.login_users)]
        self.password_login(target, username, "9a login page", "9 login")

    def password_login(self, target: Target, username: str, page_name: str, name: str, second_step: bool = False):
        """The login page, then its form posted: (the answer's Set-Cookie, the form's CSRF token) after
        its 302, None after a failure."""
        cookies = {"Cookie": f"csrftoken={self.csrf_secret}"}
        with self.client.get(
            target.url("login"), headers=cookies, name=target.name(page_name), catch_response=True
        ) as page:
            fields = {name: html.unescape(value or "") for name, value in HIDDEN_INPUT_RE.findall(page.text or "")}
            if page.status_code != 200 or "csrfmiddlewaretoken" not in fields:
                page.failure(f"HTTP {page.status_code}, no login form")
                return None
        body = {
            "csrfmiddlewaretoken": fields["csrfmiddlewaretoken"],
            "login": username,
            "password": target.seed["login_password"],
        }
        with self.client.post(
            target.url("login"),
            data=urlencode(body),
            headers={**cookies, **FORM},
            name=target.name(name),
            allow_redirects=False,
            catch_response=True,
        ) as answer:
            location = answer.headers.get("Location", "/accounts/")
            # Signed in (anywhere but /accounts/), or sent on to the second step when it has one.
            expected = location.startswith(target.url("second_factor")[len(target.host) :]) == second_step
            if answer.status_code != 302 or not expected or (not second_step and "/accounts/" in location):
                answer.failure(f"HTTP {answer.status_code} to {answer.headers.get('Location')!r}")
                return None
            return answer.headers.get("Set-Cookie", ""), fields["csrfmiddlewaretoken"]


class TotpAccounts:
    """The seeded accounts with an authenticator app, handed out in turn: a code is used once
    (allauth's used-code store), so an account signs in once per 30 s period at most. When the next
    account in line has signed in during this period already, every account has: wait for the next."""

    def __init__(self):
        self.accounts = {}  # seed path -> [(username, secret)]
        self.next = Counter()
        self.used_in: dict[tuple[str, str], int] = {}

    def take(self, target: Target) -> tuple[str, str]:
        accounts = self.accounts.setdefault(target.seed_path, target.seed["totp_users"])
        if not accounts:
            raise StopUser("no seeded TOTP accounts (bench.seed --totp-users)")
        while True:
            username, secret = accounts[self.next[target.seed_path] % len(accounts)]
            if self.used_in.get((target.seed_path, username)) != totp_period(time.time()):
                self.next[target.seed_path] += 1
                return username, secret
            gevent.sleep(TOTP_PERIOD - time.time() % TOTP_PERIOD + 0.05)

    def code(self, target: Target, username: str, secret: str) -> str:
        """The account's code now: never one that turns over before the server reads it."""
        if TOTP_PERIOD - time.time() % TOTP_PERIOD < 0.5:
            gevent.sleep(TOTP_PERIOD - time.time() % TOTP_PERIOD + 0.05)
        period = totp_period(time.time())
        self.used_in[(target.seed_path, username)] = period
        return totp_code(secret, period)


totp_accounts = TotpAccounts()


class TotpLoginUser(LoginUser):
    """Scenario 9t: a sign-in with an authenticator app: the login page, the password (302 to the
    second step), then the app's current code posted there (302): what a person with a second factor
    does, the front door's attempt counting and used-code store included."""

    @task
    def login(self):
        target = self.target()
        username, secret = totp_accounts.take(target)
        answer = self.password_login(target, username, "9ta login page", "9tb password (to the second step)", True)
        if answer is None:
            return
        set_cookie, csrf_token = answer
        session = SESSION_COOKIE_RE.search(set_cookie)
        if session is None:
            raise StopUser("the password step set no session cookie")
        cookies = {"Cookie": f"sessionid={session.group(1)}; csrftoken={self.csrf_secret}"}
        body = {"csrfmiddlewaretoken": csrf_token, "code": totp_accounts.code(target, username, secret)}
        with self.client.post(
            target.url("second_factor"),
            data=urlencode(body),
            headers={**cookies, **FORM},
            name=target.name("9t code (302)"),
            allow_redirects=False,
            catch_response=True,
        ) as done:
            if done.status_code != 302 or "/accounts/" in done.headers.get("Location", "/accounts/"):
                done.failure(f"HTTP {done.status_code} to {done.headers.get('Location')!r}")


class RefreshUser(BenchUser):
    """Scenario 2: a refresh_token chain per user (and target), each refresh using the token the last returned."""

    def on_start(self):
        super().on_start()
        self.refresh_tokens = {}

    @task
    def refresh(self):
        target = self.target()
        try:
            if target.label not in self.refresh_tokens:
                tokens = self.exchange(target, codes.take(target.code_key), "2 setup (exchange)")
            else:
                params = {"grant_type": "refresh_token", "refresh_token": self.refresh_tokens[target.label]}
                tokens = self.token_request(target, params, "2 refresh")
        except FlowFailed:
            self.refresh_tokens.pop(target.label, None)  # counted as a failure; the next task starts a new chain
            return
        self.refresh_tokens[target.label] = tokens["refresh_token"]


class TokenExchangeUser(BenchUser):
    """Scenario 10 (RFC 8693): in one run, a refresh_token chain (10 refresh) beside the MCP server's
    token exchange of a seeded agent token bound to it (10 exchange), and, with BENCH_MCP_URL, the
    MCP tool call that exchanges and calls the bookings service (10 mcp tool call)."""

    MCP_URL = os.environ.get("BENCH_MCP_URL", "")

    def on_start(self):
        super().on_start()
        self.refresh_token = None

    def subject(self, target: Target) -> str:
        start, stop = target.seed["exchange_tokens"]
        return token_value(random.randrange(start, stop))

    @task
    def refresh(self):
        target = self.target()
        try:
            if self.refresh_token is None:
                tokens = self.exchange(target, codes.take(target.code_key), "10 setup (exchange)")
            else:
                params = {"grant_type": "refresh_token", "refresh_token": self.refresh_token}
                tokens = self.token_request(target, params, "10 refresh")
        except FlowFailed:
            self.refresh_token = None
            return
        self.refresh_token = tokens["refresh_token"]

    @task
    def token_exchange(self):
        target = self.target()
        body = urlencode(
            {
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "subject_token": self.subject(target),
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "resource": EXCHANGE_RESOURCE,
                "scope": "BOOKING_READ",
                "client_id": target.seed["mcp_id"],
                "client_secret": target.seed["mcp_secret"],
            }
        )
        with self.client.post(
            target.url("token"), data=body, headers=FORM, name=target.name("10 exchange"), catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {(response.text or '')[:200]}")

    @task
    def tool_call(self):
        if not self.MCP_URL:
            return
        target = self.target()
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_bookings"}}
        with self.client.post(
            self.MCP_URL,
            data=json.dumps(message),
            headers={
                "Authorization": f"Bearer {self.subject(target)}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
            name=target.name("10 mcp tool call"),
            catch_response=True,
        ) as response:
            if response.status_code != 200 or '"isError":true' in (response.text or "").replace(" ", ""):
                response.failure(f"HTTP {response.status_code}: {(response.text or '')[:200]}")


class ExchangeUser(BenchUser):
    """Scenario 3: authorization_code exchanges of pre-issued (seeded) codes."""

    @task
    def exchange_code(self):
        target = self.target()
        with contextlib.suppress(FlowFailed):
            self.exchange(target, codes.take(target.code_key), "3 exchange")


class FlowUser(BenchUser):
    """Scenario 4: the consent page, the Allow form, and the exchange of the code it returned."""

    @task
    def flow(self):
        target = self.target()
        started = time.perf_counter()
        failure = None
        try:
            self._flow(target)
        except FlowFailed as exc:
            failure = exc
        events.request.fire(
            request_type="FLOW",
            name=target.name("4 flow"),
            response_time=(time.perf_counter() - started) * 1000,
            response_length=0,
            response=None,
            context={},
            exception=failure,
        )

    def _flow(self, target: Target):
        seed = target.seed
        query = urlencode(
            {
                "client_id": seed["client_id"],
                "redirect_uri": seed["redirect_uri"],
                "response_type": "code",
                "scope": seed["scope"],
                "state": secrets.token_urlsafe(8),
                # The consent page every time (a user who granted before would get a code at once).
                "prompt": "consent",
            }
        )
        cookies = {"Cookie": f"sessionid={self.session_key(target)}; csrftoken={self.csrf_secret}"}
        with self.client.get(
            f"{target.url('authorize')}?{query}",
            headers=cookies,
            name=target.name("4a authorize page"),
            allow_redirects=False,
            catch_response=True,
        ) as page:
            fields = {name: html.unescape(value or "") for name, value in HIDDEN_INPUT_RE.findall(page.text or "")}
            if page.status_code != 200 or "csrfmiddlewaretoken" not in fields:
                page.failure(f"HTTP {page.status_code}, no consent form")
                raise FlowFailed("4a")
        # The project's form carries only the CSRF token (the query is in the URL); DOT's carries
        # the request in hidden fields and the decision in the submit button's name.
        if target.kind == "stock":
            body = {**fields, "allow": "Authorize"}
        else:
            body = {"csrfmiddlewaretoken": fields["csrfmiddlewaretoken"]}
        with self.client.post(
            f"{target.url('consent')}?{query}",
            data=urlencode(body),
            headers={**cookies, **FORM},
            name=target.name("4b consent (allow)"),
            allow_redirects=False,
            catch_response=True,
        ) as answer:
            location = answer.headers.get("Location", "") if answer.status_code == 302 else ""
            code = parse_qs(urlsplit(location).query).get("code", [None])[0]
            if code is None:
                answer.failure(f"HTTP {answer.status_code}, no code in {location[:100]!r}: {(answer.text or '')[:200]}")
                raise FlowFailed("4b")
        self.exchange(target, code, "4c exchange")


class IntrospectUser(BenchUser):
    """Scenario 5: a resource server introspects a live access token picked at random (HTTP Basic)."""

    @task
    def introspect(self):
        target = self.target()
        seed = target.seed
        credentials = f"{quote(seed['resource_server_id'], safe='')}:{quote(seed['resource_server_secret'], safe='')}"
        token = token_value(random.randrange(seed["tokens"]))
        with self.client.post(
            target.url("introspect"),
            data=urlencode({"token": token}),
            headers={**FORM, "Authorization": "Basic " + base64.b64encode(credentials.encode()).decode()},
            name=target.name("5 introspect"),
            catch_response=True,
        ) as response:
            if response.status_code != 200 or not (response.json() or {}).get("active"):
                response.failure(f"HTTP {response.status_code}: {(response.text or '')[:200]}")


class BookingsUser(BenchUser):
    """Scenario 6: GET /v2/bookings with a live token (scope BOOKING_READ).

    Each locust user is one app holding one access token and calling the API with it again and
    again, as apps do: what a resource server's cache of introspection answers is for.
    """

    @task
    def bookings(self):
        target = self.target()
        if target.kind == "jwt":  # the example service verifying JWTs itself
            token = target.seed["jwt_tokens"][self.number % len(target.seed["jwt_tokens"])]
        else:
            token = token_value(self.number % target.seed["tokens"])
        self.client.get(
            target.url("bookings"), headers={"Authorization": f"Bearer {token}"}, name=target.name("6 bookings")
        )


class StatusListUser(BenchUser):
    """Scenario 7: a resource server fetching a token status list (bench/statuslists.py made them:
    a million live JWTs' bits over the lists, some set), as many as it likes."""

    @task
    def status_list(self):
        target = self.target()
        number = random.choice(target.seed["status_lists"])
        with self.client.get(
            target.url("status_list") + str(number), name=target.name("7 status list"), catch_response=True
        ) as response:
            if response.status_code != 200 or response.headers.get("Content-Type") != "application/statuslist+jwt":
                response.failure(f"HTTP {response.status_code}: {(response.text or '')[:200]}")
