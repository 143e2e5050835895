"""The 30-line Node resource server of docs/protecting-endpoints.md (examples/node_resource_server/
server.mjs, shown there verbatim) enforces the catalog's rules through introspection: no token 401,
an inactive or foreign-audience token 401 invalid_token, a missing scope 403 naming it, ORG_ ⇒ TEAM_,
the authorization server unreachable 503."""

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.scopes.test_node_port import stub_introspection  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "examples" / "node_resource_server" / "server.mjs"
RESOURCE = "https://bookings.example.com/v2"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is needed for the Node service test (Debian: apt-get install nodejs)")
        pytest.skip("node is not installed")
    return node


def start(introspection_url: str) -> tuple[str, subprocess.Popen]:
    port = _free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PORT": str(port),
        "OAUTH_INTROSPECTION_URL": introspection_url,
        "OAUTH_RESOURCE_SERVER_ID": "bookings",
        "OAUTH_RESOURCE_SERVER_SECRET": "secret",
        "OAUTH_RESOURCE_URI": RESOURCE,
    }
    process = subprocess.Popen([_node(), str(SERVER)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 15
    while True:
        try:
            requests.get(base + "/", timeout=1)
            return base, process
        except requests.ConnectionError:
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the Node service did not start"
            time.sleep(0.1)


@pytest.fixture
def service(stub_introspection):  # noqa: F811
    base, process = start(stub_introspection)
    yield base, stub_introspection
    process.terminate()
    process.wait(timeout=5)


def answer(introspection_url: str, **claims):
    requests.put(introspection_url + "?set", data=json.dumps(claims), timeout=5)


def get(base, path, token="t"):
    return requests.get(base + path, headers={"Authorization": f"Bearer {token}"} if token else {}, timeout=10)


def test_the_doc_shows_the_service_verbatim():
    text = (ROOT / "docs" / "protecting-endpoints.md").read_text()
    assert SERVER.read_text().strip() in text
    assert len(SERVER.read_text().strip().splitlines()) <= 31


def test_no_token_is_401_without_an_error_code(service):
    base, _ = service
    response = get(base, "/v2/bookings", token=None)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="api"'


def test_a_granted_scope_passes_and_a_missing_one_is_403_naming_it(service):
    base, introspection = service
    answer(introspection, active=True, scope="BOOKING_READ", username="enduser")
    ok = get(base, "/v2/bookings")
    assert ok.status_code == 200 and ok.json()["username"] == "enduser"
    refused = get(base, "/v2/teams/7/bookings")
    assert refused.status_code == 403
    assert 'error="insufficient_scope", scope="TEAM_BOOKING_READ"' in refused.headers["WWW-Authenticate"]


def test_an_org_scope_grants_the_team_scope(service):
    base, introspection = service
    answer(introspection, active=True, scope="ORG_BOOKING_READ", username="enduser")
    assert get(base, "/v2/teams/7/bookings").status_code == 200
    assert get(base, "/v2/bookings").status_code == 403


@pytest.mark.parametrize(
    "claims, status",
    [
        ({"active": False}, 401),
        ({"active": True, "scope": "BOOKING_READ", "username": "u", "aud": ["https://other.example.com/api"]}, 401),
        ({"active": True, "scope": "BOOKING_READ", "username": "u", "aud": [RESOURCE]}, 200),
        ({"active": True, "scope": "BOOKING_READ", "username": "u", "aud": RESOURCE}, 200),
    ],
)
def test_inactive_and_foreign_audience_tokens_are_invalid(service, claims, status):
    base, introspection = service
    answer(introspection, **claims)
    response = get(base, "/v2/bookings")
    assert response.status_code == status
    if status == 401:
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_the_authorization_server_unreachable_is_503():
    base, process = start(f"http://127.0.0.1:{_free_port()}/introspect")
    try:
        assert get(base, "/v2/bookings").status_code == 503
    finally:
        process.terminate()
        process.wait(timeout=5)
