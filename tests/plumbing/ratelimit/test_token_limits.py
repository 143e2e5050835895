"""Token endpoint: failures per client and per address, every request per address (SECURITY.md)."""

import time
from urllib.parse import urlencode

import pytest
from django.test import Client

from oauthclients.models import ClientKind
from tests.factories import make_client, make_tokens
from tests.oauthflows.helpers import TOKEN, basic, get_code

HERE, ELSEWHERE, THIRD = "198.51.100.1", "198.51.100.2", "198.51.100.3"


def post(token_client, data: dict, *, address=HERE, as_json=False, **headers):
    if as_json:
        return token_client.post(TOKEN, data=data, content_type="application/json", REMOTE_ADDR=address, **headers)
    return token_client.post(
        TOKEN, data=urlencode(data), content_type="application/x-www-form-urlencoded", REMOTE_ADDR=address, **headers
    )


def exchange(token_client, client, code, secret, *, address=HERE):
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": client.redirect_uri_list[0]}
    return post(token_client, {**data, "client_id": client.client_id, "client_secret": secret}, address=address)


def refresh_as(token_client, client_id, secret, *, refresh_token="x" * 43, address=HERE, **headers):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    return post(token_client, {**data, "client_id": client_id, "client_secret": secret}, address=address, **headers)


def wrong_secret(token_client, client, *, address=HERE):
    return refresh_as(token_client, client.client_id, "cs_wrong", address=address)


def unknown_client(token_client, name, *, address=HERE):
    return refresh_as(token_client, name, "cs_wrong", address=address)


def unknown_client_from(token_client, peer, *, forwarded):
    return refresh_as(token_client, "guess", "cs_wrong", address=peer, HTTP_X_FORWARDED_FOR=forwarded)


def bad_grant(token_client, client, secret, *, address=HERE):
    return refresh_as(token_client, client.client_id, secret, refresh_token="y" * 43, address=address)


def assert_refused(response):
    assert response.status_code == 429, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "invalid_request",
        "error_description": f"Too many requests. Slow down and retry after {response['Retry-After']} seconds.",
    }
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response["Cache-Control"] == "no-store"


@pytest.fixture
def token_client(db):
    return Client(enforce_csrf_checks=True)


def test_failures_under_the_client_limit_leave_the_client_working(token_client, browser, approved_confidential, limits):
    client, secret = approved_confidential
    limits(token_failures_per_client=(3, 60))
    for _ in range(2):
        assert wrong_secret(token_client, client).status_code == 401
    code = get_code(browser, client)
    assert exchange(token_client, client, code, secret).status_code == 200


def strangers(n):
    return (f"203.0.113.{i}" for i in range(1, n + 1))


def test_strangers_wrong_secrets_never_refuse_the_apps_own_refresh(
    token_client, approved_confidential, end_user, limits
):
    # issue 28, medium 4: forty wrong secrets with the app's public client_id, from anywhere, then
    # the app's own refresh with its right secret. It used to get 429 for the rest of the window.
    client, secret = approved_confidential
    limits(token_failures_per_client=(20, 60))
    _access, refresh_token = make_tokens(end_user, client)
    answers = [wrong_secret(token_client, client, address=stranger).status_code for stranger in strangers(40)]
    assert answers == [401] * 20 + [429] * 20  # wrong secrets past the limit are still refused
    refreshed = refresh_as(token_client, client.client_id, secret, refresh_token=refresh_token)
    assert refreshed.status_code == 200, refreshed.content
    # HTTP Basic and JSON bodies are the same client: its right secret passes either way.
    _access, refresh_token = make_tokens(end_user, client)
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    assert post(token_client, data, as_json=True, HTTP_AUTHORIZATION=basic(client.client_id, secret)).status_code == 200


def test_a_right_secret_over_the_client_limit_gets_its_own_answer(token_client, browser, approved_confidential, limits):
    client, secret = approved_confidential
    limits(token_failures_per_client=(3, 60))
    for stranger in strangers(3):
        assert wrong_secret(token_client, client, address=stranger).status_code == 401
    assert bad_grant(token_client, client, secret).json()["error"] == "invalid_grant"  # not 429
    code = get_code(browser, client)
    assert exchange(token_client, client, code, secret).status_code == 200
    assert_refused(wrong_secret(token_client, client))


def test_an_unknown_client_and_a_wrong_secret_are_refused_alike_past_the_limit(
    token_client, approved_confidential, limits
):
    # SECURITY.md: unknown client and wrong secret look the same, under the limit and past it.
    client, _secret = approved_confidential
    limits(token_failures_per_client=(2, 60))
    for stranger in strangers(2):
        assert wrong_secret(token_client, client, address=stranger).status_code == 401
        assert unknown_client(token_client, "no-such-client", address=stranger).status_code == 401
    over_wrong, over_unknown = wrong_secret(token_client, client), unknown_client(token_client, "no-such-client")
    assert_refused(over_wrong)
    assert_refused(over_unknown)
    assert over_wrong.content == over_unknown.content


def test_a_public_client_has_no_per_client_failure_limit(token_client, owner, end_user, limits):
    # A public client has no secret to guess: strangers could only spend its budget.
    public = make_client(
        owner, name="Phone App", kind=ClientKind.PUBLIC, redirect_uris=["https://phone.example.com/cb"], approve=True
    ).client
    limits(token_failures_per_client=(2, 60))
    for stranger in strangers(6):
        assert wrong_secret(token_client, public, address=stranger).status_code == 401
    _access, refresh_token = make_tokens(end_user, public)
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": public.client_id}
    assert post(token_client, data).status_code == 200
    # The per-address limit still holds for it.
    limits(token_failures_per_address=(2, 60))
    for _ in range(2):
        assert wrong_secret(token_client, public, address=ELSEWHERE).status_code == 401
    assert_refused(wrong_secret(token_client, public, address=ELSEWHERE))


def test_client_failures_count_from_every_address(token_client, approved_confidential, other_confidential, limits):
    client, _secret = approved_confidential
    other, _other_secret = other_confidential
    limits(token_failures_per_client=(3, 60))
    for address in (HERE, ELSEWHERE, THIRD):
        assert wrong_secret(token_client, client, address=address).status_code == 401
    assert_refused(wrong_secret(token_client, client, address="198.51.100.4"))
    # Another client at the same address is not affected: the per-address limit is separate.
    assert wrong_secret(token_client, other, address="198.51.100.4").status_code == 401


def test_basic_json_and_form_credentials_count_against_the_same_client(token_client, approved_confidential, limits):
    client, _secret = approved_confidential
    limits(token_failures_per_client=(2, 60))
    data = {"grant_type": "refresh_token", "refresh_token": "x" * 43}
    assert post(token_client, data, HTTP_AUTHORIZATION=basic(client.client_id, "cs_wrong")).status_code == 401
    json_body = {**data, "client_id": client.client_id, "client_secret": "cs_wrong"}
    assert post(token_client, json_body, as_json=True, address=ELSEWHERE).status_code == 401
    assert_refused(wrong_secret(token_client, client, address=THIRD))
    assert_refused(post(token_client, data, address=THIRD, HTTP_AUTHORIZATION=basic(client.client_id, "cs_wrong")))


def test_an_invalid_grant_counts_per_address_but_not_against_the_client(token_client, approved_confidential, limits):
    # An app with many users meets expired refresh tokens every day; only failed client
    # authentication counts against the client.
    client, secret = approved_confidential
    limits(token_failures_per_client=(1, 60), token_failures_per_address=(3, 60))
    for _ in range(3):
        assert bad_grant(token_client, client, secret).status_code == 400
    assert_refused(bad_grant(token_client, client, secret))
    assert bad_grant(token_client, client, secret, address=ELSEWHERE).status_code == 400


def test_an_address_over_its_failure_limit_is_refused_whatever_the_client(token_client, approved_confidential, limits):
    client, secret = approved_confidential
    limits(token_failures_per_address=(3, 60))
    for name in ("guess-1", "guess-2", "guess-3"):
        assert unknown_client(token_client, name).status_code == 401
    assert_refused(unknown_client(token_client, "guess-4"))
    assert_refused(bad_grant(token_client, client, secret))
    assert unknown_client(token_client, "guess-4", address=ELSEWHERE).status_code == 401


def test_successful_exchanges_do_not_count_as_failures(token_client, browser, approved_confidential, limits):
    client, secret = approved_confidential
    limits(token_failures_per_client=(1, 60), token_failures_per_address=(1, 60))
    for _ in range(3):
        code = get_code(browser, client)
        assert exchange(token_client, client, code, secret).status_code == 200
    assert wrong_secret(token_client, client).status_code == 401
    assert_refused(wrong_secret(token_client, client))


def test_every_request_counts_towards_the_address_request_limit(token_client, browser, approved_confidential, limits):
    client, secret = approved_confidential
    limits(token_requests_per_address=(3, 60))
    for _ in range(3):
        code = get_code(browser, client)
        assert exchange(token_client, client, code, secret).status_code == 200
    code = get_code(browser, client)
    assert_refused(exchange(token_client, client, code, secret))
    assert exchange(token_client, client, code, secret, address=ELSEWHERE).status_code == 200


def test_only_posts_are_counted(token_client, limits):
    limits(token_requests_per_address=(1, 60), token_failures_per_address=(1, 60))
    for _ in range(3):
        assert token_client.get(TOKEN, REMOTE_ADDR=HERE).status_code == 405
    assert unknown_client(token_client, "guess").status_code == 401


def test_a_rotated_x_forwarded_for_gets_no_fresh_budget_by_default(token_client, approved_confidential, limits):
    client, _secret = approved_confidential
    limits(token_failures_per_address=(2, 60))
    for fake in ("192.0.2.1", "192.0.2.2"):
        assert unknown_client_from(token_client, HERE, forwarded=fake).status_code == 401
    assert_refused(unknown_client_from(token_client, HERE, forwarded="192.0.2.3"))


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_budget(token_client, limits, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]
    limits(token_failures_per_address=(2, 60))
    for _ in range(2):
        assert unknown_client_from(token_client, "10.0.0.2", forwarded="203.0.113.9").status_code == 401
    assert_refused(unknown_client_from(token_client, "10.0.0.3", forwarded="203.0.113.9"))
    # A spoofed left-most entry changes nothing: the proxy's own entry names the client.
    assert_refused(unknown_client_from(token_client, "10.0.0.2", forwarded="192.0.2.77, 203.0.113.9"))
    assert unknown_client_from(token_client, "10.0.0.2", forwarded="203.0.113.10").status_code == 401


def test_x_forwarded_for_from_an_untrusted_peer_is_ignored_even_with_proxies_configured(token_client, limits, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]
    limits(token_failures_per_address=(2, 60))
    for fake in ("203.0.113.1", "203.0.113.2"):
        assert unknown_client_from(token_client, HERE, forwarded=fake).status_code == 401
    assert_refused(unknown_client_from(token_client, HERE, forwarded="203.0.113.3"))


def test_one_ipv6_slash_64_is_one_address(token_client, limits):
    limits(token_failures_per_address=(2, 60))
    assert unknown_client(token_client, "g1", address="2001:db8:1:2::1").status_code == 401
    assert unknown_client(token_client, "g2", address="2001:db8:1:2:ffff::9").status_code == 401
    assert_refused(unknown_client(token_client, "g3", address="2001:db8:1:2::abcd"))
    assert unknown_client(token_client, "g3", address="2001:db8:1:3::1").status_code == 401


def test_a_refused_address_is_served_again_once_its_window_closes(token_client, limits):
    limits(token_failures_per_address=(1, 1))
    assert unknown_client(token_client, "guess").status_code == 401
    refused = unknown_client(token_client, "guess")
    assert refused.status_code == 429
    assert refused["Retry-After"] == "1"
    time.sleep(1.1)
    assert unknown_client(token_client, "guess").status_code == 401


def test_the_limiter_can_be_switched_off(token_client, limits, settings):
    settings.RATELIMIT_ENABLED = False
    limits(token_failures_per_address=(1, 60))
    for _ in range(3):
        assert unknown_client(token_client, "guess").status_code == 401


def test_requests_without_a_client_address_are_limited_together(token_client, approved_confidential, limits):
    # An empty REMOTE_ADDR (a Unix socket behind an untrusted proxy) is one shared key, not none.
    limits(token_failures_per_address=(3, 60))
    for name in ("guess-1", "guess-2", "guess-3"):
        assert unknown_client(token_client, name, address="").status_code == 401
    assert_refused(unknown_client(token_client, "guess-4", address=""))
    assert unknown_client(token_client, "guess-4", address=ELSEWHERE).status_code == 401
