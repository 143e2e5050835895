"""A passkey added on the address `make run` prints, through `make run` itself.

The real recipe runs (migrate, collectstatic, demo_server: seeding and serving) on a fresh SQLite
file and a free port, with nothing installed (a fresh stamp; this interpreter's directory as BIN);
the test reads the URL it prints, opens it in Chromium with Chrome's virtual authenticator (as
test_passkeys.py), signs in as a demo user, adds a passkey, signs out and signs in with it alone.

Twice: once with Chromium resolving `localhost` to 127.0.0.1 only, once to ::1 only
(--host-resolver-rules), since clients differ in which address they try first; the server listens
on both (config/management/commands/demo_server.py).
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, PROJECT_ROOT, _unavailable, new_page
from tests.browser.test_passkeys import credentials, log_out, virtual_authenticator

READY = re.compile(r"^The demo is ready at (\S+)$")
# Only what a person's shell would have: none of the test suite's settings (its issuer, its
# database, its settings module) may reach the server.
KEPT_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")


def free_port_on_both_loopbacks() -> int:
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        try:
            with socket.socket(socket.AF_INET6) as probe6:
                probe6.bind(("::1", port))
        except OSError:
            continue
        return port
    pytest.fail("no port free on both 127.0.0.1 and ::1")


@pytest.fixture(scope="module")
def make_run(tmp_path_factory):
    """`make run PORT=…` serving, and the URL it printed; stopped (its process group) after the module."""
    if shutil.which("make") is None:
        _unavailable("make is not installed")
    folder = tmp_path_factory.mktemp("make-run")
    stamp = folder / "installed-stamp"
    stamp.touch()  # newer than pyproject.toml: make installs nothing
    port = free_port_on_both_loopbacks()
    environment = {key: os.environ[key] for key in KEPT_ENVIRONMENT if key in os.environ}
    environment["DATABASE_URL"] = f"sqlite:///{folder / 'db.sqlite3'}"
    environment["PYTHONUNBUFFERED"] = "1"  # a terminal gets each line at once; a file would wait for a buffer
    log = (folder / "make-run.log").open("w+")
    server = subprocess.Popen(
        [shutil.which("make"), "-s", "run", f"PORT={port}", f"BIN={Path(sys.executable).parent}", f"STAMP={stamp}"],
        cwd=PROJECT_ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the autoreloader's child too, stopped with its group
    )
    try:
        url = None
        deadline = time.monotonic() + 180
        while url is None and time.monotonic() < deadline:
            if server.poll() is not None:
                break
            log.seek(0)
            url = next((m[1] for line in log.read().splitlines() if (m := READY.match(line.strip()))), None)
            time.sleep(0.5)
        log.seek(0)
        printed = log.read()
        assert url is not None, f"make run printed no URL:\n{printed}"
        for address in ("127.0.0.1", "::1"):  # listening on both before the summary is printed
            socket.create_connection((address, port), timeout=5).close()
        yield {"url": url, "port": port, "printed": printed}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(15)
        log.close()


@pytest.fixture
def chromium_resolving(request):
    """A headless Chromium whose `localhost` is only the address given (the conftest's, otherwise)."""
    address = request.param
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _unavailable(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install '.[test]')")
    rules = f"--host-resolver-rules=MAP localhost {address}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, rules])
        try:
            yield browser
        finally:
            browser.close()


@pytest.mark.parametrize(
    "chromium_resolving, login, password",
    [
        ("127.0.0.1", "enduser", "enduser-demo-password"),
        ("[::1]", "developer", "developer-demo-password"),
    ],
    indirect=["chromium_resolving"],
    ids=["localhost-is-127.0.0.1", "localhost-is-::1"],
)
def test_a_passkey_is_added_and_signs_in_on_the_address_make_run_prints(make_run, chromium_resolving, login, password):
    base = make_run["url"].rstrip("/")
    assert base == f"http://localhost:{make_run['port']}", make_run["printed"]
    assert f"Starting development server at {base}/" in make_run["printed"]
    page = new_page(chromium_resolving)
    cdp, authenticator = virtual_authenticator(page)

    page.goto(base + "/accounts/login/")
    page.fill("#id_login", login)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.click("main button[type=submit]")
    page.goto(base + "/accounts/2fa/webauthn/add/")
    assert urlsplit(page.url).path == "/accounts/2fa/webauthn/add/", page.url
    assert page.input_value("#id_name") == "Chrome on Linux"  # the device's name (headless Chromium's)
    assert page.is_checked("#id_passwordless")
    with page.expect_navigation():
        page.click("#mfa_webauthn_add")
    assert urlsplit(page.url).path == "/accounts/2fa/recovery-codes/", page.url
    (stored,) = credentials(cdp, authenticator)
    assert stored["rpId"] == "localhost" and stored["isResidentCredential"] is True

    # Signed out, the passkey alone signs in.
    log_out(page, base)
    page.goto(base + "/accounts/login/")
    with page.expect_navigation():
        page.click("#passkey_login")
    assert urlsplit(page.url).path in ("/settings/apps/", "/settings/developer/"), page.url
    assert login in page.content()
    assert not page.locator(".messages .passkey-error").count()
