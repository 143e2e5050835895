"""Introspection by a resource server is never throttled; everyone else's still is."""

import pytest

from tests.factories import make_resource_server
from tests.ratelimit.test_revoke_introspect_limits import ELSEWHERE, ask, assert_refused

INTROSPECT = "/v2/auth/oauth2/introspect"


@pytest.fixture
def server(reviewer):
    created = make_resource_server(reviewer)
    return created.client, created.secret.plaintext


@pytest.fixture
def tight(limits):
    limits(introspect_requests_per_client=(3, 60), introspect_requests_per_address=(3, 60))


@pytest.mark.parametrize("use_basic", [True, False], ids=["basic", "body"])
def test_a_resource_server_is_never_counted(tight, server, use_basic):
    client, secret = server
    for _ in range(10):
        assert ask(INTROSPECT, client, secret, use_basic=use_basic).status_code == 200


def test_an_app_on_the_same_address_is_still_limited(tight, server, confidential):
    for _ in range(10):
        assert ask(INTROSPECT, *server).status_code == 200
    for _ in range(3):
        assert ask(INTROSPECT, *confidential).status_code == 200
    assert_refused(ask(INTROSPECT, *confidential))


def test_guessing_a_resource_servers_secret_is_limited(tight, server):
    client, _secret = server
    for _ in range(3):
        assert ask(INTROSPECT, client, "cs_wrong", address=ELSEWHERE).status_code == 401
    assert_refused(ask(INTROSPECT, client, "cs_wrong", address=ELSEWHERE))
