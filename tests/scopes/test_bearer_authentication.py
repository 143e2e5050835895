"""Bearer tokens on /v2 resource endpoints (RFC 6750 §2.1, §3; RFC 9700 §4.3.2; SECURITY.md)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from oauthclients import services
from oauthclients.models import AccessToken, RefreshToken, digest
from tests.oauthflows.helpers import refresh
from tests.scopes.responses import assert_invalid_token, assert_no_token, assert_success
from tests.scopes.tokens import access_token_row, bearer, tokens_through_http

pytestmark = [pytest.mark.urls("tests.scopes.urls_for_tests"), pytest.mark.django_db]

BOOKINGS = "/v2/bookings"


@pytest.fixture
def booking_token(issue_token):
    """An access token of the end user's with BOOKING_READ, what /v2/bookings asks for."""
    return issue_token("BOOKING_READ")


# --- the header ---------------------------------------------------------------------------------


def test_no_authorization_header_is_401_with_a_bare_bearer_challenge(client):
    assert_no_token(client.get(BOOKINGS))


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_scheme_is_case_insensitive(client, booking_token, end_user, scheme):
    data = assert_success(client.get(BOOKINGS, **bearer(booking_token, scheme)), "BookingsApi")
    assert data["user"] == end_user.pk


@pytest.mark.parametrize("scheme", ["Basic", "Token", "MAC", "Bearertoken"])
def test_another_scheme_counts_as_no_token(client, booking_token, scheme):
    assert_no_token(client.get(BOOKINGS, **bearer(booking_token, scheme)))


@pytest.mark.parametrize("header", ["Bearer", "Bearer ", "Bearer  ", "Bearer one two"])
def test_a_malformed_bearer_header_is_an_invalid_token(client, header):
    assert_invalid_token(client.get(BOOKINGS, HTTP_AUTHORIZATION=header))


@pytest.mark.parametrize("raw", ["not-a-token", "x" * 513, "tökén", "A" * 43])
def test_an_unknown_token_is_an_invalid_token(client, raw):
    error = assert_invalid_token(client.get(BOOKINGS, **bearer(raw)))
    assert raw not in error["message"]


def test_the_token_value_is_never_echoed(client, booking_token):
    # A wrong token that differs from a real one in its last character.
    wrong = booking_token[:-1] + ("A" if booking_token[-1] != "A" else "B")
    response = client.get(BOOKINGS, **bearer(wrong))
    assert_invalid_token(response)
    assert wrong.encode() not in response.content and booking_token.encode() not in response.content


# --- tokens anywhere but the header are ignored (RFC 9700 §4.3.2) --------------------------------


def test_a_query_string_token_does_not_authenticate(client, booking_token):
    assert_no_token(client.get(BOOKINGS, {"access_token": booking_token}))


def test_a_form_body_token_does_not_authenticate(client, booking_token):
    response = client.post(BOOKINGS, {"access_token": booking_token})
    assert_no_token(response)


def test_a_query_string_token_does_not_block_a_valid_header_token(client, booking_token, end_user):
    response = client.get(BOOKINGS, {"access_token": "garbage"}, **bearer(booking_token))
    assert assert_success(response, "BookingsApi")["user"] == end_user.pk


def test_a_query_string_token_of_another_user_does_not_change_who_is_calling(
    client, issue_token, end_user, other_developer
):
    theirs = issue_token("BOOKING_READ", user=other_developer)
    response = client.get(BOOKINGS, {"access_token": theirs}, **bearer(issue_token("BOOKING_READ")))
    assert assert_success(response, "BookingsApi")["user"] == end_user.pk


def test_a_browser_session_does_not_authenticate(browser):
    # /v2 is for bearer tokens only: a logged-in browser carries no ambient authority there.
    assert_no_token(browser.get(BOOKINGS))
    assert_no_token(browser.get("/v2/me"))


# --- tokens that are no longer (or never were) access tokens -------------------------------------


def test_an_expired_token_is_an_invalid_token(client, issue_token):
    token = issue_token("BOOKING_READ")
    assert_success(client.get(BOOKINGS, **bearer(token)))
    AccessToken.objects.filter(token_checksum=digest(token)).update(expires=timezone.now() - timedelta(seconds=1))
    assert_invalid_token(client.get(BOOKINGS, **bearer(token)))


def test_a_token_issued_already_expired_is_an_invalid_token(client, issue_token):
    assert_invalid_token(client.get(BOOKINGS, **bearer(issue_token("BOOKING_READ", expires_in=-60))))


def test_a_deleted_token_is_an_invalid_token(client, booking_token):
    assert_success(client.get(BOOKINGS, **bearer(booking_token)))
    access_token_row(booking_token).revoke()  # DOT's revocation deletes the row
    assert_invalid_token(client.get(BOOKINGS, **bearer(booking_token)))


def test_a_refresh_token_is_not_an_access_token(client, browser, api, confidential):
    app, secret = confidential
    body = tokens_through_http(browser, api, app, secret, "BOOKING_READ")
    assert_success(client.get(BOOKINGS, **bearer(body["access_token"])))
    assert_invalid_token(client.get(BOOKINGS, **bearer(body["refresh_token"])))


def test_revoking_the_refresh_token_kills_its_access_token(client, browser, api, confidential):
    app, secret = confidential
    body = tokens_through_http(browser, api, app, secret, "BOOKING_READ")
    assert_success(client.get(BOOKINGS, **bearer(body["access_token"])))
    RefreshToken.objects.get(token_checksum=digest(body["refresh_token"])).revoke()
    assert_invalid_token(client.get(BOOKINGS, **bearer(body["access_token"])))


def test_a_refresh_retires_the_previous_access_token(client, browser, api, confidential):
    app, secret = confidential
    first = tokens_through_http(browser, api, app, secret, "BOOKING_READ")
    renewed = refresh(api, app, first["refresh_token"], secret=secret)
    assert renewed.status_code == 200, renewed.content
    assert_invalid_token(client.get(BOOKINGS, **bearer(first["access_token"])))
    assert_success(client.get(BOOKINGS, **bearer(renewed.json()["access_token"])), "BookingsApi")


# --- the client and the user behind a token -----------------------------------------------------


def test_rejecting_an_approved_client_kills_its_tokens_at_once(client, booking_token, reviewer):
    assert_success(client.get(BOOKINGS, **bearer(booking_token)))
    services.client_reject(client=access_token_row(booking_token).application, actor=reviewer, reason="Phishing.")
    assert_invalid_token(client.get(BOOKINGS, **bearer(booking_token)))


def test_rejecting_a_client_kills_tokens_obtained_through_the_flow(client, browser, api, confidential, reviewer):
    app, secret = confidential
    body = tokens_through_http(browser, api, app, secret, "BOOKING_READ")
    services.client_reject(client=app, actor=reviewer, reason="Abuse reported.")
    assert_invalid_token(client.get(BOOKINGS, **bearer(body["access_token"])))
    assert_invalid_token(client.get("/v2/me", **bearer(body["access_token"])))


def test_rejecting_one_client_leaves_other_clients_tokens_alone(client, issue_token, reviewer):
    doomed, other = issue_token("BOOKING_READ"), issue_token("BOOKING_READ")
    services.client_reject(client=access_token_row(doomed).application, actor=reviewer, reason="Phishing.")
    assert_success(client.get(BOOKINGS, **bearer(other)))


def test_a_deactivated_users_token_is_an_invalid_token(client, booking_token, end_user):
    assert_success(client.get(BOOKINGS, **bearer(booking_token)))
    end_user.is_active = False
    end_user.save(update_fields=["is_active"])
    assert_invalid_token(client.get(BOOKINGS, **bearer(booking_token)))


def test_a_dead_token_is_refused_even_on_a_public_endpoint(client):
    # RFC 6750 §3.1: a presented token is checked even where none is needed; the caller learns it
    # is dead instead of acting anonymously without knowing.
    assert_invalid_token(client.post("/v2/bookings/create", **bearer("not-a-token")))
