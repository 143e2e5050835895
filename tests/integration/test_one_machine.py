"""docs/deploying.md, "Try it on one machine", run as written: its certificate and settings commands,
two gunicorn servers under config/gunicorn.py with those settings (debug off), and HAProxy with
docs/haproxy.cfg ending TLS with that certificate. Only the ports (free ones), the database (the
test's) and the signing-key encryption key (the test's, which made the keys) differ.

Through the proxy, over https: the metadata names the https issuer, a person signs in with Secure
cookies, consents, the app exchanges the code and calls /v2/me; a client that does not trust the
certificate is refused; plain http to a server is redirected to https, and no HSTS is sent.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.db import connection

from signing.keys import signing_key_create
from tests.integration.flows import TIMEOUT, authorize, exchange, login, make_server_user, me
from tests.integration.server import PROJECT_ROOT, database_url, free_port, running_server

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
DOC = PROJECT_ROOT / "docs" / "deploying.md"
DOC_DIR = "/tmp/oauth-one-machine"


def the_commands() -> list[str]:
    """The section's shell block, a command a line (continuations joined)."""
    text = DOC.read_text()
    section = text[text.index("## Try it on one machine") :]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL).group(1)
    return block.replace("\\\n", " ").splitlines()


def _from(commands: list[str], prefix: str) -> str:
    (found,) = [command for command in commands if command.startswith(prefix)]
    return found


@pytest.fixture
def one_machine(_postgres_only_guard, tmp_path, monkeypatch):
    commands = the_commands()
    # The certificate and the settings file, as written, in a folder of the test's.
    first = commands.index(_from(commands, "DIR="))
    last = commands.index("EOF", first)
    script = "\n".join(commands[first : last + 1]).replace(DOC_DIR, str(tmp_path))
    subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, check=True, capture_output=True, timeout=60)
    written = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines())
    ports = {"8443": str(free_port()), "8001": str(free_port()), "8002": str(free_port())}
    issuer = written["OAUTH_ISSUER"].replace("8443", ports["8443"])
    environment = written | {
        "DATABASE_URL": database_url(connection.settings_dict),
        "OAUTH_ISSUER": issuer,
        "OAUTH_SIGNING_KEY_ENCRYPTION_KEY": settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY,
        "DJANGO_REQUIRE_HTTPS": "1",  # the default with debug off (the test harness turns it off)
    }
    signing_key_create(algorithm="ES256")
    signing_key_create(algorithm="RS256")
    for server in ("8001", "8002"):
        assert _from(commands, f"GUNICORN_BIND=127.0.0.1:{server} ").endswith(
            ".venv/bin/gunicorn -c config/gunicorn.py config.wsgi"
        )
    proxy = _from(commands, "HAPROXY_BIND=").replace("$DIR", str(tmp_path))
    for documented, chosen in ports.items():
        proxy = proxy.replace(f":{documented}", f":{chosen}")
    serve = {"workers": 2, "extra_args": ("-c", "config/gunicorn.py"), "env": environment, "probe": "/healthz"}
    log = tmp_path / "haproxy.log"
    with (
        running_server(None, port=int(ports["8001"]), **serve),
        running_server(None, port=int(ports["8002"]), **serve),
        log.open("wb") as output,
    ):
        process = subprocess.Popen(
            ["bash", "-c", proxy],
            cwd=PROJECT_ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _until_serving(process, log, issuer, tmp_path / "localhost.crt")
            monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "localhost.crt"))  # the browser trusts it
            yield issuer, tmp_path, ports
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)


def _until_serving(process: subprocess.Popen, log: Path, url: str, certificate: Path, timeout: float = 30) -> None:
    """Until the proxy answers over https (it starts with both servers in its pool: they are ready)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(errors="replace")
        with contextlib.suppress(requests.RequestException):
            if requests.get(url + "/readyz", verify=str(certificate), timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError("HAProxy did not answer over https:\n" + log.read_text(errors="replace"))


def test_the_production_path_runs_locally_over_https(one_machine, server_app):
    issuer, folder, ports = one_machine
    metadata = requests.get(issuer + "/.well-known/oauth-authorization-server", timeout=TIMEOUT)
    assert metadata.status_code == 200 and metadata.json()["issuer"] == issuer
    assert issuer.startswith("https://localhost:") and metadata.json()["token_endpoint"].startswith(issuer)
    assert "Strict-Transport-Security" not in metadata.headers  # DJANGO_HSTS_SECONDS=0

    browser = login(issuer, make_server_user("wile").username)
    secure = {cookie.name: cookie.secure for cookie in browser.cookies}
    assert {"csrftoken", "sessionid"} <= set(secure) and all(secure.values()), secure
    client, secret = server_app
    tokens = exchange(issuer, client, secret, authorize(browser, issuer, client))
    assert tokens.status_code == 200, tokens.text
    assert me(issuer, tokens.json()["access_token"]).status_code == 200

    # The documented check, as written.
    check = _from(the_commands(), "curl ").replace("$DIR", str(folder)).replace("8443", ports["8443"])
    said = subprocess.run(["bash", "-c", check], capture_output=True, text=True, timeout=30)
    assert said.returncode == 0 and f'"issuer": "{issuer}"' in said.stdout, said.stderr

    with pytest.raises(requests.exceptions.SSLError):  # a client that does not trust the certificate
        requests.get(issuer + "/healthz", verify=requests.certs.where(), timeout=TIMEOUT)
    plain = requests.get(
        f"http://127.0.0.1:{ports['8001']}/accounts/login/", headers={"Host": "localhost"}, allow_redirects=False
    )
    assert plain.status_code == 301 and plain.headers["Location"].startswith("https://localhost")
