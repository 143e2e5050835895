"""The bench's scenarios without HTTP: the WSGI application called in this process, for quick trials.

`make bench` is the measurement; this is the workbench for trying a change in seconds. It calls
the project's WSGI application (config.settings_bench: the same middleware, URLs and floor
views as the served bench) with hand-built WSGI environs, alternating project and floor in
short blocks, and reports process CPU per request of each and their ratio. No gunicorn, no
sockets, no PostgreSQL CPU: the fixed costs of serving are left out, so the ratios here are
lower than `make bench`'s, and a change's effect in ms per request is what to read.

    BENCH_KEEP_DATABASES=1 BENCH_KEEP_WORKDIR=1 make bench   # leaves bench_project and its seed file
    python -m bench.inprocess --seed /tmp/bench-…/seed-project.json [--scenarios 1,2,3,5] [--profile 2]
    python -m bench.inprocess --seed … --scenarios 9 --rounds 2 --block 20   # the login (project only), and
                                                    # its POST's statements with 1 and 50 live sessions
    python -m bench.inprocess --seed … --steps      # scenario 4 by step: page, Allow, exchange
    python -m bench.inprocess --seed … --scenarios 2j,3j   # issuing JWTs ("project") against opaque
                                                    # tokens ("floor"), both the project's

Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench_project) and
DJANGO_SECRET_KEY (the key the seed's sessions were signed with, for scenario 4).
"""

import argparse
import base64
import cProfile
import io
import json
import os
import pstats
import random
import re
import sys
import time
from urllib.parse import parse_qs, urlencode, urlsplit

from bench.common import ROUTES

CSRF_SECRET = "a" * 32
HIDDEN_CSRF_RE = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


def configure() -> None:
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_project")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_bench")
    os.environ.setdefault("DJANGO_SECRET_KEY", "x" * 50)
    os.environ.update(
        DJANGO_DEBUG="0",
        DJANGO_REQUIRE_HTTPS="0",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DJANGO_LOG_LEVEL="WARNING",
        OAUTH_ISSUER="http://127.0.0.1",
    )


class Client:
    """Calls the WSGI application with a minimal environ, as gunicorn would."""

    def __init__(self, application):
        self.application = application

    def call(self, method: str, path: str, *, query: str = "", body: bytes = b"", headers: dict | None = None):
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.version": (1, 0),
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        if body:
            environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
            environ["CONTENT_LENGTH"] = str(len(body))
        for name, value in (headers or {}).items():
            environ["HTTP_" + name.upper().replace("-", "_")] = value
        status_headers = {}

        def start_response(status, response_headers, exc_info=None):
            status_headers["status"] = int(status.split()[0])
            status_headers["headers"] = dict(response_headers)

        chunks = self.application(environ, start_response)
        try:
            content = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        return status_headers["status"], status_headers["headers"], content


class Scenarios:
    """Each scenario's request for a target ("project" or "floor"); raises on a wrong answer."""

    ROUTES = ROUTES

    def __init__(self, client: Client, seed: dict, first_code: int):
        from bench.common import code_value, token_value

        self.client, self.seed = client, seed
        self.code_value, self.token_value = code_value, token_value
        self.next_code = first_code
        self.refresh = {}
        self.queries = {}

    def take_code(self) -> str:
        self.next_code += 1
        return self.code_value(self.next_code - 1)

    def take_jwt_code(self) -> str:
        """A seeded code bound to the JWT resource server (bench/seed.py: numbered [codes, codes + jwt_codes))."""
        first, end = self.seed["jwt_codes"]
        if not hasattr(self, "next_jwt_code"):
            self.next_jwt_code = first + random.randrange((end - first) // 2)
        self.next_jwt_code += 1
        return self.code_value(self.next_jwt_code - 1)

    def check(self, name, status, headers, content, expected=200):
        if status != expected:
            raise RuntimeError(f"{name}: HTTP {status}: {content[:300]!r}")
        self.queries[name] = headers.get("X-DB-Queries")
        return content

    def token(self, target, params, name):
        params = {**params, "client_id": self.seed["client_id"], "client_secret": self.seed["client_secret"]}
        status, headers, content = self.client.call(
            "POST", self.ROUTES[target]["token"], body=urlencode(params).encode()
        )
        return json.loads(self.check(f"{name} {target}", status, headers, content))

    def me(self, target):
        token = self.token_value(random.randrange(self.seed["tokens"]))
        self.check(
            f"1 {target}",
            *self.client.call("GET", self.ROUTES[target]["me"], headers={"Authorization": "Bearer " + token}),
        )

    def exchange(self, target, code=None, name="3"):
        params = {"grant_type": "authorization_code", "code": code or self.take_code()}
        return self.token(target, {**params, "redirect_uri": self.seed["redirect_uri"]}, name)

    def _refreshed(self, target, chain: str, take_code, name: str) -> None:
        """One refresh of the chain `chain` at `target`, begun by exchanging a code from `take_code`."""
        if chain not in self.refresh:
            self.refresh[chain] = self.exchange(target, take_code(), name=f"{name} setup")["refresh_token"]
        params = {"grant_type": "refresh_token", "refresh_token": self.refresh[chain]}
        self.refresh[chain] = self.token(target, params, name)["refresh_token"]

    def refresh_token(self, target):
        self._refreshed(target, target, self.take_code, "2")

    def refresh_jwt(self, arm):
        """Scenario 2's JWT row: "project" refreshes a chain issuing JWTs, "floor" the opaque chain
        (the bar: the first at >= 0.95 x the second)."""
        if arm == "floor":
            return self.refresh_token("project")
        self._refreshed("project", "jwt", self.take_jwt_code, "2j")

    def exchange_jwt(self, arm):
        """Scenario 3's JWT row: "project" exchanges codes for JWTs, "floor" for opaque tokens."""
        return self.exchange("project", self.take_jwt_code() if arm == "project" else None, name="3j")

    def introspect(self, target):
        token = self.token_value(random.randrange(self.seed["tokens"]))
        credentials = base64.b64encode(
            f"{self.seed['resource_server_id']}:{self.seed['resource_server_secret']}".encode()
        ).decode()
        status, headers, content = self.client.call(
            "POST",
            self.ROUTES[target]["introspect"],
            body=urlencode({"token": token}).encode(),
            headers={"Authorization": "Basic " + credentials},
        )
        if not json.loads(self.check(f"5 {target}", status, headers, content))["active"]:
            raise RuntimeError("5: inactive")

    def flow(self, target, steps: list[float] | None = None):
        """Scenario 4; with `steps`, each step's process CPU is added to it (page, Allow, exchange)."""
        query = urlencode(
            {
                "client_id": self.seed["client_id"],
                "redirect_uri": self.seed["redirect_uri"],
                "response_type": "code",
                "scope": self.seed["scope"],
                "state": "s1",
                "prompt": "consent",  # the consent page every time, as a first authorization
            }
        )
        cookies = {"Cookie": f"sessionid={self.seed['sessions'][0]}; csrftoken={CSRF_SECRET}"}
        started = time.process_time()
        answer = self.client.call("GET", self.ROUTES[target]["authorize"], query=query, headers=cookies)
        shown = time.process_time()
        page = self.check(f"4a {target}", *answer)
        csrf = HIDDEN_CSRF_RE.search(page).group(1).decode()
        body = urlencode({"csrfmiddlewaretoken": csrf}).encode()
        posted = time.process_time()
        status, headers, content = self.client.call(
            "POST", self.ROUTES[target]["consent"], query=query, body=body, headers=cookies
        )
        allowed = time.process_time()
        self.check(f"4b {target}", status, headers, content, expected=302)
        code = parse_qs(urlsplit(headers["Location"]).query)["code"][0]
        exchanging = time.process_time()
        self.exchange(target, code, name="4c")
        if steps is not None:
            steps[0] += shown - started
            steps[1] += allowed - posted
            steps[2] += time.process_time() - exchanging

    def empty(self, target):
        self.check(f"0 {target}", *self.client.call("GET", self.ROUTES[target]["empty"]))

    def login(self, target, username=None):
        """Scenario 9 (the project only: no floor): the login page, then a password login (302)."""
        cookies = {"Cookie": f"csrftoken={CSRF_SECRET}"}
        page = self.check(f"9a {target}", *self.client.call("GET", self.ROUTES[target]["login"], headers=cookies))
        csrf = HIDDEN_CSRF_RE.search(page).group(1).decode()
        body = {"csrfmiddlewaretoken": csrf, "login": username or self.seed["login_users"][0]}
        body["password"] = self.seed["login_password"]
        status, headers, content = self.client.call(
            "POST", self.ROUTES[target]["login"], body=urlencode(body).encode(), headers=cookies
        )
        self.check(f"9 {target}", status, headers, content, expected=302)
        return int(headers["X-DB-Queries"])

    def login_statements(self) -> dict:
        """The login POST's statements of the seed's accounts with 1 and with 50 live sessions."""
        return {count: self.login("project", username) for count, username in self.seed["session_probe_users"].items()}


SCENARIO_METHODS = {
    "0": "empty",
    "1": "me",
    "2": "refresh_token",
    "3": "exchange",
    "4": "flow",
    "5": "introspect",
    # JWT access tokens against opaque ones, both the project's: "project" is the JWT row, "floor" the opaque.
    "2j": "refresh_jwt",
    "3j": "exchange_jwt",
    "9": "login",
}
# Scenarios with no floor: the project alone.
PROJECT_ONLY = frozenset({"9"})


def measure(scenarios: Scenarios, scenario: str, *, rounds: int, block: int) -> dict:
    method = getattr(scenarios, SCENARIO_METHODS[scenario])
    cpu = {"project": 0.0} if scenario in PROJECT_ONLY else {"project": 0.0, "floor": 0.0}
    for target in cpu:  # warm up: imports, URL resolver, connection
        for _ in range(block):
            method(target)
    for _ in range(rounds):
        for target in cpu:
            started = time.process_time()
            for _ in range(block):
                method(target)
            cpu[target] += time.process_time() - started
    count = rounds * block
    return {target: seconds * 1000 / count for target, seconds in cpu.items()}


FLOW_STEPS = ("authorize page (GET)", "Allow (POST)", "code exchange")


def measure_steps(scenarios: Scenarios, *, rounds: int, block: int) -> dict:
    """Scenario 4 by step: each step's process CPU per request (ms), project and floor interleaved."""
    steps = {"project": [0.0, 0.0, 0.0], "floor": [0.0, 0.0, 0.0]}
    for target in steps:  # warm up
        for _ in range(block):
            scenarios.flow(target)
    for _ in range(rounds):
        for target, sums in steps.items():
            for _ in range(block):
                scenarios.flow(target, sums)
    count = rounds * block
    return {target: [seconds * 1000 / count for seconds in sums] for target, sums in steps.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", required=True, help="the seed JSON of bench_project (bench/seed.py)")
    parser.add_argument("--scenarios", default="0,1,2,3,4,5")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--block", type=int, default=100)
    parser.add_argument("--first-code", type=int, default=None, help="first seeded code to use (default: random)")
    parser.add_argument("--profile", metavar="SCENARIO", help="profile this scenario's project requests instead")
    parser.add_argument("--steps", action="store_true", help="scenario 4 by step (page, Allow, exchange) instead")
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--lines", type=int, default=60, help="how many rows of the profile to print")
    args = parser.parse_args(argv)
    configure()
    seed = json.loads(open(args.seed).read())  # noqa: SIM115
    import django
    from django.core.handlers.wsgi import WSGIHandler

    django.setup()
    first = args.first_code if args.first_code is not None else random.randrange(seed["codes"] // 2)
    scenarios = Scenarios(Client(WSGIHandler()), seed, first)
    if args.profile:
        method = getattr(scenarios, SCENARIO_METHODS[args.profile])
        for _ in range(args.block):
            method("project")
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.rounds * args.block):
            method("project")
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.lines)
        return 0
    if args.steps:
        cpu = measure_steps(scenarios, rounds=args.rounds, block=args.block)
        for number, step in enumerate(FLOW_STEPS):
            project, floor = cpu["project"][number], cpu["floor"][number]
            print(f"{step:22s} project {project:.3f} ms, floor {floor:.3f} ms, floor/project {floor / project:.2f}")
        return 0
    for scenario in args.scenarios.split(","):
        if scenario == "9":
            print(f"scenario 9: login POST statements by live sessions {scenarios.login_statements()}", flush=True)
        cpu = measure(scenarios, scenario, rounds=args.rounds, block=args.block)
        queries = {target: scenarios.queries.get(f"{scenario} {target}") for target in cpu}
        if "floor" not in cpu:
            print(f"scenario {scenario}: project {cpu['project']:.3f} ms  queries {queries}", flush=True)
            continue
        print(
            f"scenario {scenario}: project {cpu['project']:.3f} ms, floor {cpu['floor']:.3f} ms, "
            f"floor/project {cpu['floor'] / cpu['project']:.2f}  queries {queries}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
