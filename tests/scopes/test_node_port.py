"""A Node resource server written from docs/verifying-tokens.md and scopes/catalog.json alone
(examples/node_resource_server/verify.mjs) passes scopes/verification_vectors.json, as scopes/ does:
the doc, the catalog and the vectors are enough for a port in another language."""

import http.server
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stub_introspection():
    """An introspection endpoint whose next answer the port sets with PUT (the vector's `token`)."""
    answer = {"body": b'{"active": false}'}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_PUT(self):
            answer["body"] = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(204)
            self.end_headers()

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer["body"])))
            self.end_headers()
            self.wfile.write(answer["body"])

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/introspect"
    server.shutdown()


def test_a_node_port_passes_the_vectors(stub_introspection):
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is needed for the port test (Debian: apt-get install nodejs)")
        pytest.skip("node is not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/introspect"
    result = subprocess.run(
        [
            node,
            str(ROOT / "examples/node_resource_server/verify.mjs"),
            str(ROOT / "scopes/verification_vectors.json"),
            stub_introspection,
            closed,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    import json

    count = len(json.loads((ROOT / "scopes/verification_vectors.json").read_text())["vectors"])
    assert result.stdout.strip().endswith(f"{count} passed, 0 failed"), result.stdout
