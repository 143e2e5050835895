"""Where a request's time goes: py-spy on the bench's gunicorn workers (BENCH_PROFILE=1 make bench).

For each profiled scenario, the project and its floor are each put under the same load as in the
measured runs (extra runs, not counted) while py-spy samples every worker (--subprocesses
--nonblocking: the workers are never paused), inside gunicorn's request handling only
(SyncWorker.handle). Idle threads are left out, but py-spy counts a worker waiting in psycopg
for PostgreSQL's answer as busy, so "worker ms" per request are on CPU, ready to run (the
machine has 2 cores, shared with other jobs) or waiting for the database.

Each sample is charged to the innermost frame of a known owner (Django's ORM, psycopg, DRF,
oauthlib, django-oauth-toolkit, one of the project's apps, ...); standard-library frames are
charged to their caller, so `hashlib` called from oauthflows/ counts as oauthflows/. Absolute
numbers swing with the machine's load; the split between owners and the project-floor
difference are what the profile is for. The table's CPU columns (bench/locustfile.py, from
/proc) give the true CPU per request.
"""

import subprocess
import threading
from collections import Counter
from pathlib import Path

PROFILE_SECONDS = 12
RATE = 100  # samples per second per worker
OWNERS = [  # (path prefix in py-spy's frames, what it is), the first match wins
    ("psycopg", "psycopg + waiting for PostgreSQL"),
    ("django/db/", "Django ORM (SQL, model instances)"),
    ("django/template", "Django templates"),
    ("django/middleware/csrf", "Django CSRF"),
    ("django/contrib/sessions", "Django sessions"),
    ("django/contrib/auth", "Django auth"),
    ("django/", "Django (handler, middleware, request, response)"),
    ("rest_framework/", "Django REST framework"),
    ("oauthlib/", "oauthlib"),
    ("oauth2_provider/", "django-oauth-toolkit"),
    ("whitenoise/", "WhiteNoise"),
    ("gunicorn/", "gunicorn (HTTP parsing, socket)"),
    ("bench/", "bench (floor views, query counter)"),
]
PROJECT_DIRS = ("config/", "plumbing/", "oauthflows/", "oauthclients/", "scopes/", "profiles/")
REQUEST_FRAME = "SyncWorker.handle ("
INCLUSIVE_OWNERS = PROJECT_DIRS + ("oauth2_provider/", "oauthlib/", "rest_framework/", "bench/", "django/contrib/")


def _frame_file(frame: str) -> str:
    # "function (path/to/file.py:123)"
    return frame.rpartition(" (")[2].rpartition(":")[0]


def owner(frames: list[str]) -> tuple[str, str]:
    """The innermost known owner of a stack (root first), and that frame's function."""
    for frame in reversed(frames):
        path = _frame_file(frame)
        function = f"{frame.rpartition(' (')[0]} ({path})"
        if path.startswith(PROJECT_DIRS):
            return "project: " + path.split("/", 1)[0] + "/", function
        for prefix, name in OWNERS:
            if path.startswith(prefix):
                return name, function
    return "other", "other"


# The layers of a request, for the per-core breakdown (docs/performance.md, "Where a refresh's CPU goes").
LAYERS = (
    "gunicorn and WSGI (HTTP parsing, socket, request and response objects)",
    "middleware",
    "URL resolution",
    "view: DRF, oauthlib, django-oauth-toolkit and the project's code",
    "ORM: query building and SQL compilation",
    "ORM: model instances, transactions, backend",
    "psycopg (driver, sending, waiting, reading)",
)
ORM_COMPILATION = ("django/db/models/sql/", "django/db/models/expressions.py", "django/db/models/lookups.py")
MIDDLEWARE_FILES = (
    "django/middleware/",
    "django/contrib/sessions/middleware.py",
    "django/contrib/auth/middleware.py",
    "django/contrib/messages/middleware.py",
    "corsheaders/",
    "whitenoise/",
    "config/",
    "plumbing/",
    "profiles/middleware.py",
    "bench/middleware.py",
)
VIEW_FILES = ("rest_framework/", "oauthlib/", "oauth2_provider/", "bench/floor.py", *PROJECT_DIRS)


KNOWN_FILES = (
    "django/",
    "psycopg",
    "rest_framework/",
    "oauthlib/",
    "oauth2_provider/",
    "gunicorn/",
    "corsheaders/",
    "whitenoise/",
    "bench/",
    *PROJECT_DIRS,
)
HANDLER_FRAME = "BaseHandler._get_response (django/core/handlers/base.py"
# A worker blocked in psycopg's wait for PostgreSQL's answer: py-spy samples it as busy, but it
# is not on the CPU. These samples are left out of the layers' shares of the worker's CPU.
WAITING = "waiting for PostgreSQL"


def layer(frames: list[str]) -> str:
    """The layer a sample (frames root first, from the request handler down) belongs to.

    psycopg anywhere in the stack: psycopg. Otherwise the innermost frame of a known package
    decides for the ORM (standard-library frames count for their caller). Otherwise, below
    Django's handler (`_get_response`): URL resolution, a middleware's process_view, or the
    view; above it: the middleware chain, or gunicorn and WSGI.
    """
    paths = [_frame_file(frame) for frame in frames]
    if frames and frames[-1].startswith("Connection.wait (psycopg/"):
        return WAITING
    if any(path.startswith("psycopg") for path in paths):
        return LAYERS[6]
    known = [path for path in paths if path.startswith(KNOWN_FILES)]
    leaf = known[-1] if known else ""
    if leaf.startswith("django/db/"):
        return LAYERS[4] if leaf.startswith(ORM_COMPILATION) else LAYERS[5]
    handler = next((i for i, frame in enumerate(frames) if frame.startswith(HANDLER_FRAME)), None)
    if handler is not None:
        below = paths[handler + 1 :]
        if any(path.startswith("django/urls/") for path in below):
            return LAYERS[2]
        if any(path.startswith(MIDDLEWARE_FILES) for path in below) and not any(
            path.startswith(VIEW_FILES) for path in below
        ):
            return LAYERS[1]
        return LAYERS[3]
    if any(path.startswith(MIDDLEWARE_FILES) for path in paths):
        return LAYERS[1]
    return LAYERS[0]


def summarize(raw: Path, requests: float) -> dict:
    """py-spy's raw (collapsed) stacks -> worker ms per request, by owner and by function."""
    by_owner, by_function, inclusive, by_layer = Counter(), Counter(), Counter(), Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = stack.split(";")
        start = next((i for i, frame in enumerate(frames) if frame.startswith(REQUEST_FRAME)), None)
        if start is None:
            continue  # the master, or a worker waiting for a connection
        frames, samples = frames[start:], int(count)
        total += samples
        who, function = owner(frames)
        by_owner[who] += samples
        by_function[function] += samples
        by_layer[layer(frames)] += samples
        seen = set()
        for frame in frames:
            function, _, location = frame.rpartition(" (")
            path = location.rpartition(":")[0]
            key = f"{function} ({path})"
            if path.startswith(INCLUSIVE_OWNERS) and key not in seen:
                seen.add(key)
                inclusive[key] += samples
    ms = 1000 / RATE / requests if requests else 0.0
    on_cpu = total - by_layer[WAITING]

    def rows(counter, limit):
        return (
            [
                {"what": what, "worker_ms": round(n * ms, 2), "share": round(n / total, 3)}
                for what, n in counter.most_common(limit)
            ]
            if total
            else []
        )

    return {
        "requests": round(requests),
        "samples": total,
        "worker_ms_per_request": round(total * ms, 2),
        "by_owner": rows(by_owner, 20),
        "by_function": rows(by_function, 60),
        "top_functions": rows(inclusive, 40),
        # Each layer's share of the worker's samples on the CPU (waiting for PostgreSQL left out):
        # the report scales it by the worker CPU measured from /proc.
        "layers": {name: round(by_layer[name] / on_cpu, 4) if on_cpu else 0.0 for name in LAYERS},
        "waiting_share": round(by_layer[WAITING] / total, 4) if total else 0.0,
    }


def profile_scenarios(bench, server, scenarios, *, bin_dir, warmup: float, log) -> dict:
    """Profile each scenario on the project and on its floor; returns {"1 project": summary, ...}.

    Called by the one driver, bench/run.py (which passes its interpreter's folder, warm-up and
    logger): this module imports nothing of the driver.
    """
    BIN, WARMUP = bin_dir, warmup  # noqa: N806 - the names the body below has always used

    profiles = {}
    for scenario, user_class, main_request in scenarios:
        for target in ("project", "floor"):
            raw = bench.workdir / f"py-spy-{scenario}-{target}.txt"
            spy_seconds = PROFILE_SECONDS - 2
            command = [
                str(BIN / "py-spy"),
                "record",
                "--pid",
                str(server.process.pid),
                "--subprocesses",
                "--nonblocking",
                "--rate",
                str(RATE),
                "--format",
                "raw",
                "--output",
                str(raw),
                "--duration",
                str(spy_seconds),
            ]
            spies = []
            # py-spy starts once the warm-up is over, and stops before the run does.
            timer = threading.Timer(WARMUP + 3, _start_spy, args=(spies, command))
            timer.start()
            result = bench.measure([(server, target)], scenario, user_class, duration=PROFILE_SECONDS, keep=False)
            timer.join()
            for spy in spies:
                spy.wait(timeout=60)
            rps = result["labels"][f"{target}@{bench.tokens(server.database)}"]["requests"][main_request]["rps"]
            if not raw.exists():
                log(f"py-spy wrote no profile for scenario {scenario} ({target}); is ptrace allowed here?")
                continue
            profiles[f"{scenario} {target}"] = summary = summarize(raw, rps * spy_seconds)
            log(f"profiled scenario {scenario} ({target}): {summary['worker_ms_per_request']} worker ms per request")
    return profiles


def render(profiles: dict) -> str:
    """Per scenario: the project and its floor side by side, by owner, then the project's heaviest functions."""
    lines = []
    scenarios = sorted({name.split()[0] for name in profiles})
    for scenario in scenarios:
        project, floor = profiles.get(f"{scenario} project"), profiles.get(f"{scenario} floor")
        if not project or not floor:
            continue
        gap = project["worker_ms_per_request"] - floor["worker_ms_per_request"]
        lines += [
            f"### Scenario {scenario}: {project['worker_ms_per_request']:.1f} worker ms per request, "
            f"floor {floor['worker_ms_per_request']:.1f} (difference {gap:+.1f})",
            "",
            "| owner (innermost known frame) | project worker ms | floor worker ms | difference |",
            "|---|---:|---:|---:|",
        ]
        ours = {row["what"]: row["worker_ms"] for row in project["by_owner"]}
        theirs = {row["what"]: row["worker_ms"] for row in floor["by_owner"]}
        for what in sorted(set(ours) | set(theirs), key=lambda w: -(ours.get(w, 0) + theirs.get(w, 0))):
            a, b = ours.get(what, 0.0), theirs.get(what, 0.0)
            if a + b >= 0.05:
                lines.append(f"| {what} | {a:.2f} | {b:.2f} | {a - b:+.2f} |")
        lines += [
            "",
            "Where the difference is, by innermost known function (the largest differences):",
            "",
            "| function | project | floor | difference |",
            "|---|---:|---:|---:|",
        ]
        ours = {row["what"]: row["worker_ms"] for row in project["by_function"]}
        theirs = {row["what"]: row["worker_ms"] for row in floor["by_function"]}
        for what in sorted(set(ours) | set(theirs), key=lambda w: -abs(ours.get(w, 0) - theirs.get(w, 0)))[:12]:
            a, b = ours.get(what, 0.0), theirs.get(what, 0.0)
            lines.append(f"| `{what}` | {a:.2f} | {b:.2f} | {a - b:+.2f} |")
        lines += [
            "",
            "The project's request, inclusive (the middleware chain around everything left out):",
            "",
            "| function | worker ms | share |",
            "|---|---:|---:|",
        ]
        shown = [
            row
            for row in project["top_functions"]
            if not row["what"].split(" (")[0].endswith(("Middleware.__call__", "<locals>.counting"))
        ][:12]
        lines += [f"| `{row['what']}` | {row['worker_ms']:.2f} | {row['share']:.0%} |" for row in shown]
        lines.append("")
    return "\n".join(lines)


def _start_spy(spies: list, command: list[str]) -> None:
    # Bound through Timer's args, not a closure: each loop iteration keeps its own list and command.
    spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
