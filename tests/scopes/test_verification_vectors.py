"""scopes/verification_vectors.json, run against scopes/ itself: the same table any port in another
language runs (docs/verifying-tokens.md). Introspection answers come from a stand-in server, so
each vector's answer is exactly what it says."""

import json
import socket
from pathlib import Path

import pytest
from django.core.cache import caches
from django.test import Client

from tests.scopes.conftest import active_answer
from tests.scopes.tokens import ALL_SCOPES

VECTORS = json.loads((Path(__file__).resolve().parents[2] / "scopes" / "verification_vectors.json").read_text())
pytestmark = [pytest.mark.urls("tests.scopes.urls_for_tests"), pytest.mark.django_db]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=[vector["name"] for vector in VECTORS["vectors"]])
def test_the_verifier_answers_as_the_shared_vector_says(vector, settings, answering_server):
    url, answer = answering_server
    settings.OAUTH_TOKEN_VERIFIER = "scopes.introspection.IntrospectionVerifier"
    settings.OAUTH_INTROSPECTION_URL = url
    settings.OAUTH_RESOURCE_SERVER_ID, settings.OAUTH_RESOURCE_SERVER_SECRET = "bookings-api", "cs_test"
    settings.OAUTH_INTROSPECTION_CACHE_SECONDS = 0
    settings.OAUTH_RESOURCE_URI = VECTORS["resource_uri"]
    caches["default"].clear()
    token = vector["token"]
    headers = {}
    if token == "unavailable":
        settings.OAUTH_INTROSPECTION_URL = f"http://127.0.0.1:{_closed_port()}/introspect"
        headers["HTTP_AUTHORIZATION"] = "Bearer some-token"
    elif token is not None:
        answer["body"] = (
            active_answer(**{k: v for k, v in token.items() if k != "active"}) if token["active"] else token
        )
        headers["HTTP_AUTHORIZATION"] = "Bearer some-token"

    response = getattr(Client(), vector["method"].lower())(vector["path"], **headers)

    expect = vector["expect"]
    assert response.status_code == expect["status"], response.content
    if expect["status"] == 403:
        challenge = response["WWW-Authenticate"]
        assert 'error="insufficient_scope"' in challenge
        if "required_scope" in expect:
            assert f'scope="{expect["required_scope"]}"' in challenge
    if expect["status"] == 401:
        assert response["WWW-Authenticate"].startswith("Bearer ")


def test_the_vectors_cover_every_rule_a_port_must_copy():
    names = " ".join(vector["name"] for vector in VECTORS["vectors"])
    for rule in (
        "ORG implies TEAM",
        "TEAM does not imply ORG",
        "webhooks have no TEAM scope",
        "empty scope list",
        "deny by default",
        "503, never 401",
        "refresh token",
        "public endpoint",
    ):
        assert rule in names, rule
    named = {
        scope
        for vector in VECTORS["vectors"]
        if isinstance(vector["token"], dict)
        for scope in vector["token"].get("scope", "").split() + [vector["expect"].get("required_scope", "")]
        if scope
    }
    assert named <= set(ALL_SCOPES.split()), named - set(ALL_SCOPES.split())
