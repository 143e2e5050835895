"""docs/verifying-tokens.md §7's test vectors (scopes/jwt_vectors.json: a JWKS, a status list, and
JWT access tokens valid and broken) pass through scopes.jwt.JwtVerifier as the file says: the valid
one is active with its sub and scope, every broken one is refused. The JWKS and the status list
are served from the file in place of https://auth.example.com (nothing leaves the machine)."""

import json
from pathlib import Path

import pytest
import requests

from scopes.jwt import JwtVerifier

VECTORS = json.loads((Path(__file__).resolve().parents[2] / "scopes" / "jwt_vectors.json").read_text())
DOC = (Path(__file__).resolve().parents[2] / "docs" / "verifying-tokens.md").read_text()


def served(url: str) -> requests.Response:
    response = requests.Response()
    response.status_code = 200
    if url == VECTORS["issuer"] + "/.well-known/jwks.json":
        response._content = json.dumps(VECTORS["jwks"]).encode()
    elif url in VECTORS["status_lists"]:
        response._content = VECTORS["status_lists"][url].encode()
    else:
        response.status_code = 404
        response._content = b""
    return response


@pytest.fixture
def vectors_verifier(settings):
    settings.OAUTH_ISSUER = VECTORS["issuer"]
    settings.OAUTH_RESOURCE_URI = VECTORS["resource"]
    settings.OAUTH_INTROSPECTION_URL = ""
    verifier = JwtVerifier()
    verifier.session.get = lambda url, **kwargs: served(url)
    return verifier


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[case["name"] for case in VECTORS["cases"]])
def test_each_vector_verifies_as_the_file_says(vectors_verifier, case):
    verification = vectors_verifier.verify(case["token"])
    if not case["active"]:
        assert verification is None
        return
    assert verification is not None
    assert verification.token.subject == case["sub"]
    assert " ".join(verification.token.scopes) == case["scope"]


def test_the_vectors_cover_a_valid_token_and_each_kind_of_breakage():
    names = [case["name"] for case in VECTORS["cases"]]
    assert sum(case["active"] for case in VECTORS["cases"]) == 1
    for broken in ("revoked", "signature", "audience", "issuer", "expired", "typ"):
        assert any(broken in name for name in names), broken


def test_the_docs_name_the_vectors():
    assert "scopes/jwt_vectors.json" in DOC and "tests/scopes/test_jwt_vectors.py" in DOC
