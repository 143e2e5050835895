"""Revocation and introspection: every request counts per address; per client_id, only failed
client authentications count, and only they are refused past the limit (SECURITY.md)."""

from urllib.parse import urlencode

import pytest
from django.test import Client

from oauthclients.models import ClientKind
from tests.factories import make_client
from tests.oauthflows.helpers import basic

ENDPOINTS = [("revoke", "/v2/auth/oauth2/revoke"), ("introspect", "/v2/auth/oauth2/introspect")]
HERE, ELSEWHERE = "198.51.100.1", "198.51.100.2"


@pytest.fixture(params=ENDPOINTS, ids=[name for name, _path in ENDPOINTS])
def endpoint(request, db, limits):
    name, path = request.param

    def tighten(*, per_client=1_000_000, per_address=1_000_000):
        limits(**{f"{name}_failures_per_client": (per_client, 60), f"{name}_requests_per_address": (per_address, 60)})

    return path, tighten


def ask(path, client, secret, *, address=HERE, use_basic=False):
    data = {"token": "t" * 43}
    headers = {}
    if use_basic:
        headers["HTTP_AUTHORIZATION"] = basic(client.client_id, secret)
    else:
        data.update(client_id=client.client_id, client_secret=secret)
    return Client().post(
        path, data=urlencode(data), content_type="application/x-www-form-urlencoded", REMOTE_ADDR=address, **headers
    )


def assert_refused(response):
    assert response.status_code == 429, response.content[:300]
    assert response.json()["error"] == "invalid_request"
    assert "retry after" in response.json()["error_description"]
    assert 1 <= int(response["Retry-After"]) <= 60


STRANGERS = [f"203.0.113.{i}" for i in range(1, 41)]


def test_strangers_wrong_secrets_never_refuse_the_clients_right_secret(endpoint, approved_confidential):
    # issue 28, medium 4: the client_id is public; forty wrong secrets from anywhere, then the app.
    path, tighten = endpoint
    client, secret = approved_confidential
    tighten(per_client=20)
    answers = [ask(path, client, "cs_wrong", address=stranger).status_code for stranger in STRANGERS]
    assert answers == [401] * 20 + [429] * 20
    assert ask(path, client, secret).status_code == 200
    assert ask(path, client, secret, address=ELSEWHERE, use_basic=True).status_code == 200


def test_wrong_secrets_past_the_client_limit_are_refused_from_every_address(endpoint, approved_confidential):
    path, tighten = endpoint
    client, secret = approved_confidential
    tighten(per_client=3)
    for stranger in STRANGERS[:3]:
        assert ask(path, client, "cs_wrong", address=stranger).status_code == 401
    assert_refused(ask(path, client, "cs_wrong", address="198.51.100.4", use_basic=True))
    for _ in range(5):  # the client's own requests are neither counted nor refused
        assert ask(path, client, secret).status_code == 200


def test_one_client_over_its_limit_leaves_other_clients_alone(endpoint, approved_confidential, other_confidential):
    path, tighten = endpoint
    client, _secret = approved_confidential
    other, other_secret = other_confidential
    tighten(per_client=2)
    for _ in range(2):
        ask(path, client, "cs_wrong")
    assert_refused(ask(path, client, "cs_wrong"))
    assert ask(path, other, "cs_wrong").status_code == 401
    assert ask(path, other, other_secret).status_code == 200


def test_a_public_client_has_no_per_client_failure_limit(endpoint, owner):
    path, tighten = endpoint
    public = make_client(
        owner, name="Phone App", kind=ClientKind.PUBLIC, redirect_uris=["https://phone.example.com/cb"], approve=True
    ).client
    tighten(per_client=2)
    for stranger in STRANGERS[:6]:
        assert ask(path, public, "cs_wrong", address=stranger).status_code == 401
    if path.endswith("/revoke"):  # a public client revokes by its client_id alone (RFC 7009 §2.1)
        body = urlencode({"token": "t" * 43, "client_id": public.client_id})
        assert Client().post(path, data=body, content_type="application/x-www-form-urlencoded").status_code == 200


def test_an_address_over_its_limit_is_refused_whatever_the_client(endpoint, approved_confidential, other_confidential):
    path, tighten = endpoint
    client, secret = approved_confidential
    other, other_secret = other_confidential
    tighten(per_address=2)
    assert ask(path, client, secret).status_code == 200
    assert ask(path, other, "cs_wrong").status_code == 401
    assert_refused(ask(path, other, other_secret))
    assert ask(path, client, secret, address=ELSEWHERE).status_code == 200
