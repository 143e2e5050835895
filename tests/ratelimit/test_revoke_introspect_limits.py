"""Revocation and introspection: every request counts, per client and per address."""

from urllib.parse import urlencode

import pytest
from django.test import Client

from tests.oauthflows.helpers import basic

ENDPOINTS = [("revoke", "/v2/auth/oauth2/revoke"), ("introspect", "/v2/auth/oauth2/introspect")]
HERE, ELSEWHERE = "198.51.100.1", "198.51.100.2"


@pytest.fixture(params=ENDPOINTS, ids=[name for name, _path in ENDPOINTS])
def endpoint(request, db, limits):
    name, path = request.param

    def tighten(*, per_client=1_000_000, per_address=1_000_000):
        limits(**{f"{name}_requests_per_client": (per_client, 60), f"{name}_requests_per_address": (per_address, 60)})

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


def test_requests_under_the_client_limit_are_answered(endpoint, confidential):
    path, tighten = endpoint
    client, secret = confidential
    tighten(per_client=3)
    for _ in range(3):
        assert ask(path, client, secret).status_code == 200


def test_a_client_over_its_limit_is_refused_before_the_view(endpoint, confidential, django_assert_num_queries):
    path, tighten = endpoint
    client, secret = confidential
    tighten(per_client=3)
    for address in ("198.51.100.1", "198.51.100.2", "198.51.100.3"):
        assert ask(path, client, secret, address=address).status_code == 200
    with django_assert_num_queries(0):
        assert_refused(ask(path, client, secret, address="198.51.100.4", use_basic=True))


def test_one_client_over_its_limit_leaves_other_clients_alone(endpoint, confidential, other_confidential):
    path, tighten = endpoint
    client, secret = confidential
    other, other_secret = other_confidential
    tighten(per_client=2)
    for _ in range(2):
        ask(path, client, secret)
    assert_refused(ask(path, client, secret))
    assert ask(path, other, other_secret).status_code == 200


def test_an_address_over_its_limit_is_refused_whatever_the_client(endpoint, confidential, other_confidential):
    path, tighten = endpoint
    client, secret = confidential
    other, other_secret = other_confidential
    tighten(per_address=2)
    assert ask(path, client, secret).status_code == 200
    assert ask(path, other, "cs_wrong").status_code == 401
    assert_refused(ask(path, other, other_secret))
    assert ask(path, client, secret, address=ELSEWHERE).status_code == 200
