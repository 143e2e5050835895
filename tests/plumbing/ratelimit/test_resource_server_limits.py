"""Introspection by a resource server is never throttled; everyone else's still is."""

from urllib.parse import urlencode

import pytest
from django.test import Client

from tests.factories import make_tokens
from tests.oauthflows.helpers import basic
from tests.plumbing.ratelimit.test_revoke_introspect_limits import ELSEWHERE, ask, assert_refused

INTROSPECT = "/v2/auth/oauth2/introspect"


@pytest.fixture
def tight(limits):
    limits(introspect_failures_per_client=(3, 60), introspect_requests_per_address=(3, 60))


@pytest.mark.parametrize("use_basic", [True, False], ids=["basic", "body"])
def test_a_resource_server_is_never_counted(tight, resource_server, use_basic):
    client, secret = resource_server
    for _ in range(10):
        assert ask(INTROSPECT, client, secret, use_basic=use_basic).status_code == 200


def test_an_app_on_the_same_address_is_still_limited(tight, resource_server, approved_confidential):
    for _ in range(10):
        assert ask(INTROSPECT, *resource_server).status_code == 200
    for _ in range(3):
        assert ask(INTROSPECT, *approved_confidential).status_code == 200
    assert_refused(ask(INTROSPECT, *approved_confidential))


def test_guessing_a_resource_servers_secret_is_limited(tight, resource_server):
    client, _secret = resource_server
    for _ in range(3):
        assert ask(INTROSPECT, client, "cs_wrong", address=ELSEWHERE).status_code == 401
    assert_refused(ask(INTROSPECT, client, "cs_wrong", address=ELSEWHERE))


# --- a resource server relaying junk tokens is counted, by its inactive answers only ---


def introspect(resource_server, token):
    client, secret = resource_server
    return Client().post(
        INTROSPECT,
        data=urlencode({"token": token}),
        content_type="application/x-www-form-urlencoded",
        HTTP_AUTHORIZATION=basic(client.client_id, secret),
    )


def test_a_resource_server_relaying_junk_tokens_gets_a_clear_429(limits, resource_server):
    limits(introspect_inactive_per_resource_server=(3, 60))
    for n in range(3):
        assert introspect(resource_server, f"junk-{n}").json() == {"active": False}
    assert_refused(introspect(resource_server, "junk-4"))


def test_active_answers_are_never_counted_for_a_resource_server(
    limits, resource_server, end_user, approved_confidential
):
    limits(introspect_inactive_per_resource_server=(3, 60))
    access, _refresh = make_tokens(end_user, approved_confidential[0])
    for _ in range(20):
        assert introspect(resource_server, access).json()["active"] is True
    for n in range(3):
        assert introspect(resource_server, f"junk-{n}").status_code == 200
    assert_refused(introspect(resource_server, access))  # over its budget of junk: refused until the window closes


def test_another_clients_junk_does_not_spend_a_resource_servers_budget(limits, resource_server, approved_confidential):
    limits(introspect_inactive_per_resource_server=(3, 60))
    for _ in range(5):
        ask(INTROSPECT, *approved_confidential)
    assert introspect(resource_server, "junk").status_code == 200
