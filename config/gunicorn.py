"""gunicorn settings for production: `gunicorn -c config/gunicorn.py config.wsgi` (docs/operating.md).

Graceful shutdown with a readiness drain. gunicorn closes its listening socket the moment the master
handles SIGTERM, so a load balancer that still believes the server ready would see refused
connections. Here SIGTERM first only sets the drain flag (operations.drain): /readyz answers 503 at
once while every request is still served, for GUNICORN_DRAIN_SECONDS, long enough for the balancer's
checks to take the server out (HAProxy: inter x fall; Kubernetes: periodSeconds x failureThreshold).
Then gunicorn's own graceful stop runs: the socket closes, workers finish what they hold (up to
graceful_timeout) and exit. A second SIGTERM during the drain stops at once; SIGINT and SIGQUIT
stop at once as always.

Prometheus (prometheus-client's multiprocess mode): every worker writes its counters to files in
PROMETHEUS_MULTIPROC_DIR, which /metrics adds up. The directory is emptied at start (old workers'
counters would count again) and a new temporary one is made when none is set.

The control socket (gunicorn 27's `gunicornc`): gunicorn's default is one path per user
($XDG_RUNTIME_DIR/gunicorn.ctl, else ~/.gunicorn/gunicorn.ctl), so two servers on one host would
share it, and the first to stop would remove the other's. Here each server gets its own, in the same
folder, named after what it binds: gunicorn-127.0.0.1-8001.ctl (on_starting, once --bind is known).
GUNICORN_CONTROL_SOCKET or --control-socket names another path; --no-control-socket turns it off.
"""

import os
import re
import shutil
import sys
import tempfile
import time

from operations.drain import drain_start

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "0") or 0) or (2 * (os.cpu_count() or 1) + 1)
worker_class = "sync"
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
DRAIN_SECONDS = float(os.environ.get("GUNICORN_DRAIN_SECONDS", "10"))
if os.environ.get("GUNICORN_CONTROL_SOCKET"):
    control_socket = os.environ["GUNICORN_CONTROL_SOCKET"]

if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="prometheus-multiproc-")


def control_socket_for(binds: list[str], default: str) -> str:
    """The server's own control socket: gunicorn's default folder, a name from its addresses."""
    name = "_".join(re.sub(r"[^\w.-]+", "-", bind.removeprefix("unix:")).strip("-") for bind in binds)
    return os.path.join(os.path.dirname(default), f"gunicorn-{name}.ctl")


def on_starting(server):
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory, exist_ok=True)
    default = server.cfg.settings["control_socket"].default
    if server.cfg.control_socket == default:  # neither GUNICORN_CONTROL_SOCKET nor --control-socket
        server.cfg.set("control_socket", control_socket_for(server.cfg.bind, default))
    if server.cfg.control_socket:
        # gunicorn makes the socket's folder when it is missing, by a check then a mkdir: two servers
        # starting in the same instant both see it missing and the second fails ("File exists") and
        # runs without its socket. Made here first, tolerating one that exists, they both have it.
        folder = os.path.dirname(server.cfg.control_socket)
        if folder:
            os.makedirs(folder, mode=0o700, exist_ok=True)


def post_fork(server, worker):
    """With --preload the master loaded the application, and declared the metrics' zero-valued series
    (operations.metrics.series_declare) in files that on_starting then removed: each worker writes
    them again in its own. Without --preload the application is not loaded yet (each worker loads
    it, and declares them, next)."""
    metrics = sys.modules.get("operations.metrics")
    if metrics is not None:
        metrics.series_declare()


def when_ready(server):
    """Wrap the master's SIGTERM handling with the drain (see the module docstring)."""
    stop = server.handle_term
    manage = server.murder_workers
    state = {"until": None}

    def handle_term():
        if state["until"] is not None or DRAIN_SECONDS <= 0:
            stop()  # a second SIGTERM, or no drain: gunicorn's graceful stop now
        drain_start()
        state["until"] = time.monotonic() + DRAIN_SECONDS
        server.log.info("SIGTERM: /readyz answers 503; serving %.1f s more before the graceful stop", DRAIN_SECONDS)

    def murder_workers():
        # The master's loop runs this at least once a second: the end of the drain is noticed here.
        if state["until"] is not None and time.monotonic() >= state["until"]:
            server.log.info("Drain over: stopping")
            stop()
        manage()

    server.handle_term = handle_term
    server.murder_workers = murder_workers


def child_exit(server, worker):
    """A dead worker's live gauges no longer count (its counters do: they are totals)."""
    # Imported here, in the master: prometheus_client picks its multiprocess storage when first
    # imported, which must come after PROMETHEUS_MULTIPROC_DIR is set above and never before a fork.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
