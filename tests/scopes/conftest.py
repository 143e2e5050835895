# Fixtures shared with other test packages are imported, not copied: the token factory, and the
# real OAuth flow's browser, app client and confidential client from tests/oauthflows.
import http.server
import json
import threading
import time

import pytest

from tests.oauthflows.conftest import api, confidential, legacy  # noqa: F401
from tests.scopes.tokens import issue_token  # noqa: F401


@pytest.fixture
def answering_server():
    """A local authorization server stand-in whose introspection answers what the test sets."""
    answer = {"body": {}}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            payload = json.dumps(answer["body"]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/introspect", answer
    server.shutdown()


def active_answer(**overrides):
    """An RFC 7662 active answer as the authorization server gives it; None values are left out."""
    body = {
        "active": True,
        "scope": "BOOKING_READ",
        "client_id": "some-app",
        "username": "enduser",
        "sub": "7",
        "exp": int(time.time()) + 600,
    }
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not None}
