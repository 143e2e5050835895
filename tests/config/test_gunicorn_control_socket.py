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


def test_the_sockets_folder_is_made_before_gunicorn_races_to_make_it(tmp_path, monkeypatch):
    """gunicorn checks, then makes, the socket's folder: two servers starting at once collide
    ("File exists") and one runs without its socket. on_starting makes it first, and a folder that
    is already there (the other server's) is fine."""
    import importlib.util
    from types import SimpleNamespace

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "metrics"))
    spec = importlib.util.spec_from_file_location("gunicorn_config_under_test", "config/gunicorn.py")
    config = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(config)

    class Cfg:
        def __init__(self, path):
            self.control_socket = path
            self.bind = ["127.0.0.1:8001"]
            self.settings = {"control_socket": SimpleNamespace(default=str(tmp_path / "default" / "gunicorn.ctl"))}

        def set(self, name, value):
            setattr(self, name, value)

    folder = tmp_path / "home" / ".gunicorn"
    for _ in range(2):  # the first server makes it, the second finds it there
        config.on_starting(SimpleNamespace(cfg=Cfg(str(folder / "gunicorn.ctl"))))
        assert folder.is_dir()
    config.on_starting(SimpleNamespace(cfg=Cfg(str(tmp_path / "default" / "gunicorn.ctl"))))
    assert (tmp_path / "default").is_dir()  # gunicorn's default, renamed per address, in the same folder
    off = Cfg(None)
    config.on_starting(SimpleNamespace(cfg=off))  # --no-control-socket: nothing to make
