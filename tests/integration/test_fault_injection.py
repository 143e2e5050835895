"""The fleet test's fault injection (tests/integration/faults.py) does what it says, only when marked,
and only where the tests install it: production's settings, WSGI application and gunicorn
configuration never load it.
"""

import socket

import pytest

from tests.integration import faults
from tests.plumbing.ratelimit.settings_probe import production_settings

TOKEN = "fault-token-for-this-test"


class Killed(Exception):
    """Stands for the SIGKILL (faults.die) in this process."""


@pytest.fixture
def killed(monkeypatch):
    events = []

    def die():
        events.append("killed")
        raise Killed

    monkeypatch.setattr(faults, "die", die)
    return events


def _application(events):
    def application(environ, start_response):
        events.append("application")
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]

    return application


def _environ(header: str | None) -> dict:
    return {"REQUEST_METHOD": "POST", **({faults.ENVIRON_KEY: header} if header is not None else {})}


def _header(mode: str, token: str = TOKEN) -> str:
    return faults.mark(mode, token)[faults.HEADER]


def test_kill_after_commit_kills_once_the_application_has_answered(killed):
    app = faults.kill_switch(_application(killed), TOKEN)
    with pytest.raises(Killed):
        app(_environ(_header(faults.KILL_AFTER_COMMIT)), lambda *args: None)
    # The application ran to its end (its transaction committed) before the kill; nothing returned.
    assert killed == ["application", "killed"]


class Socket:
    def __init__(self):
        self.shut = []

    def shutdown(self, how):
        self.shut.append(how)


def test_cut_before_closes_the_connection_before_the_application_sees_the_request(killed):
    app = faults.kill_switch(_application(killed), TOKEN)
    environ, started = {**_environ(_header(faults.CUT_BEFORE)), "gunicorn.socket": Socket()}, []
    assert app(environ, lambda *args: started.append(args)) == [b""]
    assert environ["gunicorn.socket"].shut == [socket.SHUT_RDWR]
    assert started == [("502 Bad Gateway", [])]
    assert killed == []  # neither the application nor the kill


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        f"{faults.KILL_AFTER_COMMIT} wrong-token",
        f"{faults.KILL_AFTER_COMMIT} {TOKEN}x",
        f"{faults.KILL_AFTER_COMMIT}",
        f"kill-always {TOKEN}",
        f"{faults.CUT_BEFORE}  {TOKEN}",
    ],
)
def test_an_unmarked_or_wrongly_marked_request_is_served(killed, header):
    app = faults.kill_switch(_application(killed), TOKEN)
    assert app(_environ(header), lambda *args: None) == [b"{}"]
    assert killed == ["application"]


def test_the_kill_switch_is_not_installed_without_a_token():
    with pytest.raises(RuntimeError, match=faults.TOKEN_VARIABLE):
        faults.kill_switch(_application([]), "")


# What a gunicorn worker runs under a configuration file, as gunicorn loads it (gunicorn.app.base:
# the file as module __config__, the settings it knows taken from it; post_worker_init called
# with the worker once its application is loaded), in a fresh interpreter under config.settings.
WORKER_PROBE = """
import importlib.util, sys
from gunicorn.config import KNOWN_SETTINGS
spec = importlib.util.spec_from_file_location("__config__", CONFIG)
module = importlib.util.module_from_spec(spec)
sys.modules["__config__"] = module
spec.loader.exec_module(module)
hooks = sorted(s.name for s in KNOWN_SETTINGS if callable(getattr(module, s.name, None)))
from config.wsgi import application
import logging
class Worker:
    wsgi = application
    log = logging.getLogger("probe")
    pid = 0
worker = Worker()
try:
    if hasattr(module, "post_worker_init"):
        module.post_worker_init(worker)
    refused = None
except RuntimeError as exc:
    refused = str(exc)
print(json.dumps({
    "hooks": hooks,
    "wsgi": type(worker.wsgi).__module__ + "." + type(worker.wsgi).__qualname__,
    "kill_switch": getattr(worker.wsgi, "fault_injection", False),
    "refused": refused,
    "loaded_from_tests": sorted(name for name in sys.modules if name == "tests" or name.startswith("tests.")),
    "settings_from_tests": [
        name for name in [*settings.MIDDLEWARE, *settings.INSTALLED_APPS, settings.WSGI_APPLICATION]
        if name.startswith("tests")
    ],
}))
"""


def _worker(config: str, tmp_path, **env: str) -> dict:
    # PROMETHEUS_MULTIPROC_DIR given, so that config/gunicorn.py makes no directory of its own.
    return production_settings(f"CONFIG = {config!r}\n" + WORKER_PROBE, PROMETHEUS_MULTIPROC_DIR=str(tmp_path), **env)


def test_production_never_loads_the_fault_injection(tmp_path):
    worker = _worker("config/gunicorn.py", tmp_path, **{faults.TOKEN_VARIABLE: TOKEN})
    # Even with a token in its environment, a production worker serves Django's own handler.
    assert worker["wsgi"] == "django.core.handlers.wsgi.WSGIHandler"
    assert worker["kill_switch"] is False
    assert worker["hooks"] == ["child_exit", "on_starting", "post_fork", "when_ready"]
    assert worker["loaded_from_tests"] == []
    assert worker["settings_from_tests"] == []


def test_the_fleet_configuration_installs_it_and_refuses_without_a_token(tmp_path):
    # The same probe sees the fault injection where the fleet test installs it: it can fail.
    worker = _worker("tests/integration/gunicorn_faults.py", tmp_path, **{faults.TOKEN_VARIABLE: TOKEN})
    assert worker["kill_switch"] is True
    assert worker["hooks"] == ["child_exit", "on_starting", "post_fork", "post_worker_init", "when_ready"]
    assert "tests.integration.faults" in worker["loaded_from_tests"]

    without = _worker("tests/integration/gunicorn_faults.py", tmp_path)
    assert without["kill_switch"] is False
    assert faults.TOKEN_VARIABLE in without["refused"]
