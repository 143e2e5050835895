"""`scopes` installs on its own (scopes/pyproject.toml): a wheel built from the folder, installed in
a clean virtual environment with only its own dependencies, runs the example bookings service —
copied out of this repository, so nothing but the installed package can be imported."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
PIP_TIMEOUT = 600


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, timeout=PIP_TIMEOUT, **kwargs)
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory) -> tuple[Path, Path]:
    """(python of a fresh venv with the scopes wheel and its openapi extra, the wheel)."""
    work = tmp_path_factory.mktemp("scopes-package")
    shutil.copytree(ROOT / "scopes", work / "scopes", ignore=shutil.ignore_patterns("__pycache__"))
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"), str(work / "scopes"))
    (wheel,) = (work / "dist").glob("scheduling_scopes-*.whl")
    run(sys.executable, "-m", "venv", str(work / "venv"))
    python = work / "venv" / "bin" / "python"
    run(str(python), "-m", "pip", "install", "--quiet", f"{wheel}[openapi]")
    return python, wheel


def test_the_wheel_carries_its_version_the_catalog_and_nothing_of_the_server(clean_venv):
    python, wheel = clean_venv
    assert wheel.name.startswith("scheduling_scopes-1.0.0-")
    probe = (
        "import json, pathlib, scopes, scopes.catalog as c, importlib.util as u;"
        "here = pathlib.Path(scopes.__file__).parent;"
        "print(json.dumps([scopes.__version__, str(here), len(c.SCOPE_NAMES),"
        " len(json.loads((here / 'catalog.json').read_text())['scopes']),"
        " [m for m in ('oauthclients', 'oauthflows', 'config', 'plumbing', 'oauth2_provider') if u.find_spec(m)]]))"
    )
    # Run from outside the checkout: `python -c` puts the working directory first on sys.path.
    outside = python.parent.parent  # the venv folder: no scopes/ beside it
    version, location, names, published, server_modules = json.loads(run(str(python), "-c", probe, cwd=outside).stdout)
    assert version == "1.0.0"
    assert "site-packages" in location
    assert names == published == 46
    assert server_modules == []


def test_the_example_service_runs_on_the_installed_package(clean_venv, tmp_path):
    python, _wheel = clean_venv
    app = tmp_path / "app"
    shutil.copytree(ROOT / "examples" / "bookings_service", app / "examples" / "bookings_service")
    shutil.copy(ROOT / "examples" / "__init__.py", app / "examples" / "__init__.py")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "OAUTH_RESOURCE_SERVER_ID": "bookings",
        "OAUTH_RESOURCE_SERVER_SECRET": "not-used-by-these-requests",
        "OAUTH_INTROSPECTION_URL": "http://127.0.0.1:9/introspect",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
    }
    manage = str(app / "examples" / "bookings_service" / "manage.py")
    run(str(python), manage, "check", env=env, cwd=app)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [str(python), manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        env={**env, "OAUTH_RESOURCE_URI": f"http://127.0.0.1:{port}/v2"},
        cwd=app,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                slots = requests.get(base + "/v2/slots", timeout=2)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and server.poll() is None, "the example service did not start"
                time.sleep(0.2)
        assert slots.status_code == 200
        refused = requests.get(base + "/v2/bookings", timeout=5)
        assert refused.status_code == 401
        assert (
            f'resource_metadata="{base}/.well-known/oauth-protected-resource/v2"' in refused.headers["WWW-Authenticate"]
        )
        metadata = requests.get(base + "/.well-known/oauth-protected-resource/v2", timeout=5).json()
        assert metadata["scopes_supported"] == [
            "BOOKING_READ",
            "BOOKING_WRITE",
            "TEAM_BOOKING_READ",
            "ORG_BOOKING_READ",
        ]
        # The authorization server is unreachable here (port 9): a token is neither allowed nor 401.
        unavailable = requests.get(base + "/v2/bookings", headers={"Authorization": "Bearer x"}, timeout=15)
        assert unavailable.status_code == 503
    finally:
        server.terminate()
        server.wait(timeout=10)
