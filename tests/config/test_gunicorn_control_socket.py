"""gunicorn 27's control socket under config/gunicorn.py (docs/operating.md, "Several servers on one
host"): each server has its own, named after its address, so that stopping one leaves the others'
in place; GUNICORN_CONTROL_SOCKET names another path. gunicorn's own default, one path per user,
is shown losing the second server's socket when the first stops."""

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.server import free_port, running_server

GUNICORNC = Path(sys.executable).parent / "gunicornc"
PRODUCTION = ("-c", "config/gunicorn.py")


def _started(path: Path, timeout: float = 15) -> bool:
    # gunicorn opens it once the first workers are spawned, a moment after it starts listening.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_socket():
            return True
        time.sleep(0.05)
    return False


def _workers(path: Path) -> list:
    answer = subprocess.run(
        [str(GUNICORNC), "-s", str(path), "-c", "show workers", "-j"], capture_output=True, text=True, timeout=30
    )
    assert answer.returncode == 0, answer.stdout + answer.stderr
    return json.loads(answer.stdout)["workers"]


def _server(tmp_path: Path, port: int, *, config: tuple[str, ...] = PRODUCTION, **env: str):
    database = f"sqlite:///{tmp_path / 'unused.sqlite3'}"  # nothing here reads the database
    metrics = tmp_path / f"metrics-{port}"
    metrics.mkdir()
    return running_server(
        database,
        workers=1,
        port=port,
        control_socket=True,
        extra_args=config,
        env={"XDG_RUNTIME_DIR": str(tmp_path), "PROMETHEUS_MULTIPROC_DIR": str(metrics), **env},
    )


def test_each_server_has_its_own_control_socket_and_keeps_it_when_another_stops(tmp_path):
    first, second = free_port(), free_port()
    mine = tmp_path / f"gunicorn-127.0.0.1-{second}.ctl"
    with _server(tmp_path, second):
        with _server(tmp_path, first):
            theirs = tmp_path / f"gunicorn-127.0.0.1-{first}.ctl"
            assert _started(theirs) and _started(mine)
            assert not (tmp_path / "gunicorn.ctl").exists()
        assert not theirs.exists()  # the first server removed its own socket, and only its own
        assert mine.is_socket() and len(_workers(mine)) == 1


def test_gunicorn_control_socket_names_the_path(tmp_path):
    named = tmp_path / "auth-blue.ctl"
    with _server(tmp_path, free_port(), GUNICORN_CONTROL_SOCKET=str(named)):
        assert _started(named) and len(_workers(named)) == 1
    assert [path.name for path in tmp_path.glob("*.ctl")] == []


def test_without_the_configuration_two_servers_share_one_socket_and_the_first_to_stop_removes_it(tmp_path):
    shared = tmp_path / "gunicorn.ctl"
    with _server(tmp_path, free_port(), config=()):
        with _server(tmp_path, free_port(), config=()):
            assert _started(shared)
        assert not shared.exists()  # the second server is still running, and cannot be reached
