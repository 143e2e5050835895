"""The Authorization header's bearer token is read once (scopes/bearer.py), by every door.

Each rule of the reading is tested for what it takes and what it refuses; each door (the /v2 API
through DRF, OpenID Connect's userinfo, RFC 7592's registration management, the metrics endpoint)
is asked the same question at MAX_TOKEN_LENGTH's edge; and a guard fails if another copy of the
reading appears in the code.
"""

import ast
import subprocess
from pathlib import Path

import pytest
from django.test import Client

from scopes import authentication
from scopes.bearer import MAX_TOKEN_LENGTH, MalformedBearer, bearer_token

ROOT = Path(__file__).resolve().parents[2]


# --- the reading --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER abc", "abc"),
        ("  Bearer   abc  ", "abc"),
        (b"Bearer abc.def-ghi_jkl~+/=", "abc.def-ghi_jkl~+/="),
        ("Bearer " + "a" * MAX_TOKEN_LENGTH, "a" * MAX_TOKEN_LENGTH),
    ],
)
def test_it_reads_the_token_of_the_bearer_scheme(header, token):
    assert bearer_token(header) == token


@pytest.mark.parametrize("header", [None, "", b"", "Basic YTpi", "Token abc", "Bearerabc", "MAC abc"])
def test_no_header_or_another_scheme_is_no_token(header):
    assert bearer_token(header) is None


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Bearer one two",
        "Bearer one\ttwo",
        "Bearer tökén",
        "Bearer " + "a\x00b",
        "Bearer " + "a" * (MAX_TOKEN_LENGTH + 1),
        "Bearer tökén".encode(),
    ],
)
def test_the_bearer_scheme_without_one_token_of_printable_ascii_is_malformed(header):
    with pytest.raises(MalformedBearer):
        bearer_token(header)


# --- every door reads it the same way, at the length's edge -------------------------------------


class Recorder:
    """A verifier that records what it was asked and knows no token."""

    def __init__(self):
        self.asked = []

    def verify(self, raw):
        self.asked.append(raw)
        return None


@pytest.fixture
def recorder(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(authentication, "get_verifier", lambda: recorder)
    from oauthflows.token import userinfo

    monkeypatch.setattr(userinfo, "get_verifier", lambda: recorder)
    return recorder


@pytest.mark.parametrize("path", ["/v2/me", "/v2/auth/oauth2/userinfo"])
def test_the_resource_doors_verify_a_token_at_the_limit_and_refuse_one_past_it_unread(db, recorder, path):
    longest = "a" * MAX_TOKEN_LENGTH
    response = Client().get(path, HTTP_AUTHORIZATION=f"Bearer {longest}")
    assert response.status_code == 401 and 'error="invalid_token"' in response["WWW-Authenticate"]
    assert recorder.asked == [longest]
    response = Client().get(path, HTTP_AUTHORIZATION=f"Bearer {longest}a")
    assert response.status_code == 401 and 'error="invalid_token"' in response["WWW-Authenticate"]
    assert recorder.asked == [longest]  # never verified: refused from its length


@pytest.mark.parametrize("path", ["/v2/me", "/v2/auth/oauth2/userinfo"])
def test_the_resource_doors_take_another_scheme_as_no_token(db, recorder, path):
    response = Client().get(path, HTTP_AUTHORIZATION="Basic YTpi")
    assert response.status_code == 401 and "error=" not in response["WWW-Authenticate"]
    assert recorder.asked == []


def test_the_metrics_token_is_read_as_every_bearer_token(db, settings):
    settings.METRICS_TOKEN = "m" * MAX_TOKEN_LENGTH
    outside = {"REMOTE_ADDR": "203.0.113.9"}
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"bearer {settings.METRICS_TOKEN}", **outside).status_code == 200
    settings.METRICS_TOKEN = "m" * (MAX_TOKEN_LENGTH + 1)  # longer than any door takes: opens nothing
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {settings.METRICS_TOKEN}", **outside).status_code == 404
    settings.METRICS_TOKEN = "two words"
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer two words", **outside).status_code == 404


def test_the_registration_management_door_reads_its_token_the_same_way(db, monkeypatch):
    from oauthflows.registration import dynamic

    asked = []

    def lookup(*, client_id, token):
        asked.append(token)

    monkeypatch.setattr(dynamic, "client_get_for_registration_token", lookup)
    longest = "r" * MAX_TOKEN_LENGTH
    for header in (f"bEaReR {longest}", f"Bearer {longest}r", "Bearer one two", "Basic YTpi"):
        response = Client().get("/v2/auth/oauth2/register/some-client", HTTP_AUTHORIZATION=header)
        assert response.status_code == 401
    assert asked == [longest]  # looked up for the well-formed token only


# --- the guard: no other reading of the header --------------------------------------------------

# A comparison with "bearer" there is about a token_type (RFC 6749 §7.1), not the header; the
# bench's floor is deliberately naive, the cost below everything the project does (bench/floor.py).
ALLOWED = {"scopes/introspection.py", "bench/floor.py"}


def _sources() -> list[str]:
    names = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [
        name
        for name in names.split()
        if not name.startswith("tests/") and name != "scopes/bearer.py" and (ROOT / name).is_file()
    ]


def _is_bearer(node) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str | bytes)
        and node.value.lower().strip()
        in (
            "bearer",
            b"bearer",
        )
    )


def bearer_readings(source: str) -> list[int]:
    """Lines that compare with the Bearer scheme's name, or test that a string starts with it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Compare)
            and any(_is_bearer(side) for side in (node.left, *node.comparators))
            or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "startswith"
                and any(_is_bearer(arg) for arg in node.args)
            )
        ):
            found.append(node.lineno)
    return found


def test_no_code_but_scopes_bearer_reads_the_bearer_scheme():
    found = {
        name: lines
        for name in _sources()
        if name not in ALLOWED and (lines := bearer_readings((ROOT / name).read_text(encoding="utf-8")))
    }
    assert found == {}, "read the header with scopes.bearer.bearer_token"


def test_the_guard_catches_a_copy():
    copy = 'def f(h):\n    scheme, _, t = h.partition(" ")\n    return scheme.lower() == "bearer"\n'
    assert bearer_readings(copy) == [3]
    assert bearer_readings('ok = parts[0].lower() != b"bearer"') == [1]
    assert bearer_readings('ok = h.lower().startswith("bearer ")') == [1]
    assert bearer_readings('body = {"token_type": "bearer"}') == []
    assert len(_sources()) > 100
