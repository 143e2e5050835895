"""A real multi-process server for the integration tests: gunicorn, sync workers, debug off.

`running_server()` starts gunicorn on a port the kernel picks (no race for a free port), waits
until it answers, yields a `LiveServer`, and always stops the whole process group afterwards.
Everything the server writes (gunicorn and Django logs) goes to a temporary file that the caller
can print when a test fails; nothing in it is a credential (the server never logs one).
"""

import contextlib
import ctypes
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import requests

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 30
STOP_TIMEOUT = 10
LISTENING_RE = re.compile(r"Listening at: http://127\.0\.0\.1:(\d+)")
PR_SET_PDEATHSIG = 1


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen
    log_path: Path

    def worker_pids(self) -> list[int]:
        """The gunicorn workers alive right now (children of the master)."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return [int(pid) for pid in children.read_text().split()]
        except OSError:
            return []

    def log_tail(self, lines: int = 200) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:])


def database_url(db: dict) -> str:
    """A DATABASE_URL for the server naming the same PostgreSQL database as Django's `db` settings."""
    user = quote(db.get("USER") or "", safe="")
    password = db.get("PASSWORD") or ""
    credentials = user + (":" + quote(password, safe="") if password else "")
    host = quote(db.get("HOST") or "127.0.0.1", safe="")
    port = db.get("PORT") or 5432
    return f"postgres://{credentials}@{host}:{port}/{quote(db['NAME'], safe='')}"


def server_environment(database_url: str, **extra: str) -> dict[str, str]:
    """Production settings (not the test settings), debug off, plain HTTP on loopback."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "OAUTH_", "DATABASE_", "RATELIMIT_", "REDIS_", "REQUIRE_POSTGRES"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="integration-" + secrets.token_urlsafe(32),
        DJANGO_REQUIRE_HTTPS="0",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=database_url,
        # These tests send many failing token requests from one address on purpose; the rate
        # limiter has its own tests and would only add 429s here.
        RATELIMIT_ENABLED="0",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def example_service_environment(server_url: str, client_id: str, secret: str, **extra: str) -> dict[str, str]:
    """The example bookings service's environment, configured only by its own variables (docs/walkthrough.md,
    "A second service"), pointing at the authorization server at `server_url`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "OAUTH_", "DATABASE_", "RATELIMIT_", "REDIS_"))
    }
    env.update(
        OAUTH_INTROSPECTION_URL=server_url + "/v2/auth/oauth2/introspect",
        OAUTH_RESOURCE_SERVER_ID=client_id,
        OAUTH_RESOURCE_SERVER_SECRET=secret,
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def _die_with_parent() -> None:
    # If the test process dies without cleaning up (SIGKILL, crash), the kernel sends the gunicorn
    # master SIGTERM, and the master stops its workers: no server outlives the test run.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _wait_until_listening(process: subprocess.Popen, log_path: Path, deadline: float) -> str:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with status {process.returncode}")
        match = LISTENING_RE.search(log_path.read_text(errors="replace"))
        if match:
            return f"http://127.0.0.1:{match.group(1)}"
        time.sleep(0.05)
    raise RuntimeError("gunicorn did not start listening in time")


def wait_until_answering(
    url: str, deadline: float, process: subprocess.Popen | None = None, path: str = "/v2/me"
) -> None:
    """Poll an endpoint that needs no database until Django answers (any HTTP status)."""
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with status {process.returncode}")
        try:
            requests.get(url + path, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.05)
    raise RuntimeError("the server did not answer in time")


def spawn_logged(arguments: list[str], *, cwd, env: dict, log_path: Path) -> subprocess.Popen:
    """A process in a group of its own (so that `stop` ends it with its children), output to log_path."""
    with log_path.open("w") as log:
        return subprocess.Popen(
            arguments, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(process: subprocess.Popen) -> None:
    """SIGINT the process group (gunicorn's quick shutdown), then SIGKILL what is left."""
    for sig, wait in ((signal.SIGINT, STOP_TIMEOUT), (signal.SIGKILL, STOP_TIMEOUT)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # A worker orphaned by a killed master is still in the group: make sure it is gone too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def running_server(
    database_url: str | None,
    *,
    workers: int = 4,
    timeout: int = 20,
    env: dict[str, str] | None = None,
    app: str = "config.wsgi",
    environment: dict[str, str] | None = None,
    port: int = 0,
    access_log: bool = False,
    extra_args: tuple[str, ...] = (),
    control_socket: bool = False,
    preload: bool = True,
    probe: str = "/v2/me",
) -> Iterator[LiveServer]:
    """gunicorn with `workers` sync workers on 127.0.0.1, stopped (process group) on exit.

    `app` and `environment` serve another WSGI application (the example resource server) with
    exactly that environment instead of this project's production settings. `port` binds a known
    port (0: any free one); `access_log` writes a line per request to the log (to count them);
    `extra_args` go to gunicorn as they are (e.g. `-c config/gunicorn.py`, the production settings).
    `control_socket`: gunicorn's control socket on (where the configuration puts it); off by default,
    since gunicorn's own default path is one per user, shared by every server a test run starts.
    `preload=False` loads the application in each worker, as docs/deploying.md's command does; `probe`
    is the path polled until the server answers (`/healthz` from loopback is not counted by the
    metrics, so that a server can be scraped having served nothing).
    """
    with tempfile.NamedTemporaryFile(prefix="gunicorn-", suffix=".log", delete=False) as log_file:
        log_path = Path(log_file.name)
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        app,
        "--workers",
        str(workers),
        "--worker-class",
        "sync",
        "--bind",
        f"127.0.0.1:{port}",
        # Workers load the app in the master and fork: a worker killed by a test is back at once.
        *(["--preload"] if preload else []),
        "--timeout",
        str(timeout),
        # Workers stop at once on SIGINT; gunicorn 27's master still waits this long before it exits.
        "--graceful-timeout",
        "1",
        *([] if control_socket else ["--no-control-socket"]),
        "--log-level",
        "info",
        *(["--access-logfile", "-"] if access_log else []),
        *extra_args,
    ]
    with log_path.open("ab") as log_file:
        process = subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            env=environment if environment is not None else server_environment(database_url, **(env or {})),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so that stop() reaches every worker
            preexec_fn=_die_with_parent,
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        url = _wait_until_listening(process, log_path, deadline)
        wait_until_answering(url, deadline, process, probe)
        yield LiveServer(url=url, process=process, log_path=log_path)
    except BaseException:
        stop(process)
        print_log(LiveServer(url="", process=process, log_path=log_path))
        raise
    stop(process)
    log_path.unlink(missing_ok=True)


def print_log(server: LiveServer) -> None:
    """Shown by pytest only for a failing test (captured output)."""
    sys.stdout.write(f"\n--- server log ({server.log_path}) ---\n{server.log_tail()}\n")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for a server whose URL must be known before it starts)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
