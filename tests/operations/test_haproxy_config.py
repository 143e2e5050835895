"""docs/haproxy.cfg, run as written by Debian's HAProxy in front of a server that echoes what it
received: forwarding headers a client sends never reach the servers (issue 38, "Also": on a
plain-HTTP bind a client's own `X-Forwarded-Proto: https` reached servers that trust it with
DJANGO_BEHIND_TLS_PROXY=1). The proxy's own values replace them: the client's address, the scheme
of the bind. The fleet (tests/integration/test_fleet.py) runs the same file under load."""

import json
import os
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from tests.integration.server import PROJECT_ROOT, free_port

HAPROXY = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
CONFIG = PROJECT_ROOT / "docs" / "haproxy.cfg"
FORGED = {
    "X-Forwarded-Proto": "https",
    "X-Forwarded-For": "6.6.6.6",
    "Forwarded": "for=6.6.6.6;proto=https;host=evil.example",
    "X-Forwarded-Host": "evil.example",
    "X-Forwarded-Port": "443",
    "X-Real-IP": "6.6.6.6",
}


class _Echo(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        body = json.dumps(dict(self.headers.items())).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def proxied():
    """The URL of HAProxy (docs/haproxy.cfg) in front of two echoing servers."""
    if HAPROXY is None:
        if os.environ.get("CI") == "true":
            pytest.fail("haproxy is not installed")
        pytest.skip("haproxy is not installed")
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Echo) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    bind = f"127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        "HAPROXY_BIND": bind,
        **{f"APP{i + 1}": f"127.0.0.1:{server.server_address[1]}" for i, server in enumerate(servers)},
    }
    proxy = subprocess.Popen(
        [HAPROXY, "-db", "-f", str(CONFIG)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://{bind}"
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                if requests.get(f"{url}/", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if proxy.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"HAProxy did not serve: {proxy.stderr.read().decode(errors='replace')[-2000:]}")
            time.sleep(0.1)
        yield url
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
        for server in servers:
            server.shutdown()
            server.server_close()


def test_forwarding_headers_a_client_sent_never_reach_the_servers(proxied):
    for _ in range(2):  # both servers (round robin)
        seen = {
            name.lower(): value for name, value in requests.get(f"{proxied}/", headers=FORGED, timeout=5).json().items()
        }
        # The proxy's own: the address it saw, the scheme of this plain-HTTP bind.
        assert seen["x-forwarded-for"] == "127.0.0.1"
        assert seen["x-forwarded-proto"] == "http"
        for name in ("forwarded", "x-forwarded-host", "x-forwarded-port", "x-real-ip"):
            assert name not in seen, (name, seen[name])
        assert "6.6.6.6" not in json.dumps(seen) and "evil.example" not in json.dumps(seen)


def test_a_request_without_them_gets_the_proxys_and_a_request_id(proxied):
    seen = {name.lower(): value for name, value in requests.get(f"{proxied}/", timeout=5).json().items()}
    assert (seen["x-forwarded-for"], seen["x-forwarded-proto"]) == ("127.0.0.1", "http")
    assert len(seen["x-request-id"]) == 36  # HAProxy's uuid(), where the client sent none
    kept = requests.get(f"{proxied}/", headers={"X-Request-ID": "lb-7f3a.42"}, timeout=5).json()
    assert {name.lower(): value for name, value in kept.items()}["x-request-id"] == "lb-7f3a.42"
