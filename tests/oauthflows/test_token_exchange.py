"""RFC 8693 token exchange (oauthflows.token.exchange): a resource server trades the user's token it
received for one bound to a downstream resource server an administrator allowed it, never wider,
never longer-lived, with `act` naming it; ending the user's grant ends the exchanged token."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from oauthclients import services
from oauthclients.exchangetargets import UnknownExchangeTarget, client_exchange_targets_set, exchange_target_uris
from oauthclients.models import AccessToken, AuditAction, ClientAuditEvent, ClientStatus, digest
from oauthflows.grants import ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE
from oauthflows.pages.services import connected_app_revoke
from signing.keys import signing_key_create
from signing.models import StatusRevocation
from signing.statuslist import allocator
from tests.factories import make_client
from tests.oauthflows.helpers import INTROSPECT, REVOKE, basic, client_post, exchange, get_code, refresh, token_request
from tests.oauthflows.test_token import assert_token_error
from tests.signing.test_jwt_access_tokens import claims_of, is_jwt

MCP = "http://127.0.0.1:8931/mcp"
BOOKINGS = "https://bookings.example.com/api"
CALENDAR = "https://calendar.example.com/api"
GRANTED = "BOOKING_READ PROFILE_READ"


def _server(reviewer, name, uri, **kw):
    created = services.resource_server_create(owner=reviewer, name=name, resource_uri=uri, actor=reviewer, **kw)
    return created.client, created.secret.plaintext


@pytest.fixture
def mcp(reviewer):
    return _server(reviewer, "Scheduling MCP", MCP)


@pytest.fixture
def bookings(reviewer):
    return _server(reviewer, "Bookings service", BOOKINGS)


@pytest.fixture
def calendar(reviewer):
    return _server(reviewer, "Calendar service", CALENDAR)


@pytest.fixture
def exchange_allowed(mcp, bookings, calendar, reviewer):
    client_exchange_targets_set(client=mcp[0], resource_uris=[BOOKINGS], actor=reviewer)


def user_tokens(browser, api, app, *, resource=MCP, scope=GRANTED) -> dict:
    client, secret = app
    response = exchange(api, client, get_code(browser, client, scope=scope, resource=resource), secret=secret)
    assert response.status_code == 200, response.content
    return response.json()


def trade(api, caller, subject_token, *, auth=True, **extra):
    client, secret = caller
    data = {
        "grant_type": TOKEN_EXCHANGE.grant_type,
        "subject_token": subject_token,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "resource": BOOKINGS,
    }
    data.update({key: value for key, value in extra.items() if value is not None})
    for key in [key for key, value in extra.items() if value is None]:
        data.pop(key, None)
    return token_request(api, data, auth=basic(client.client_id, secret) if auth else None)


def introspect(api, server, token):
    client, secret = server
    response = client_post(api, INTROSPECT, client, {"token": token}, auth=basic(client.client_id, secret))
    assert response.status_code == 200, response.content
    return response.json()


# --- success ------------------------------------------------------------------------------------


def test_a_resource_server_trades_the_users_token_for_one_bound_to_the_allowed_service(
    browser, api, confidential, mcp, bookings, exchange_allowed, end_user
):
    subject = user_tokens(browser, api, confidential)["access_token"]
    response = trade(api, mcp, subject, scope="BOOKING_READ")
    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {"access_token", "issued_token_type", "token_type", "expires_in", "scope"}  # no refresh token
    assert body["issued_token_type"] == ACCESS_TOKEN_TYPE and body["token_type"] == "bearer"
    assert body["scope"] == "BOOKING_READ"
    claims = introspect(api, bookings, body["access_token"])
    assert claims["active"] is True
    assert claims["client_id"] == confidential[0].client_id  # still the app's
    assert claims["sub"] == str(end_user.pk)
    assert claims["aud"] == [BOOKINGS]
    assert claims["act"] == {"sub": mcp[0].client_id}
    assert claims["scope"] == "BOOKING_READ"
    # The subject token has no `act`: only the exchanged one was obtained by a service.
    assert "act" not in introspect(api, bookings, subject)


def test_without_scope_the_exchanged_token_has_the_subjects(browser, api, confidential, mcp, exchange_allowed):
    subject = user_tokens(browser, api, confidential)["access_token"]
    response = trade(api, mcp, subject)
    assert response.status_code == 200, response.content
    assert sorted(response.json()["scope"].split()) == sorted(GRANTED.split())


def test_audience_names_the_target_as_resource_does(
    browser, api, confidential, mcp, bookings, calendar, exchange_allowed
):
    """RFC 8693 §2.1: `audience` (here a resource URI) names the target as `resource` does: the token
    issued is bound to it, and to nothing else."""
    subject = user_tokens(browser, api, confidential)["access_token"]
    response = trade(api, mcp, subject, resource=None, audience=BOOKINGS)
    assert response.status_code == 200, response.content
    exchanged = response.json()["access_token"]
    claims = introspect(api, bookings, exchanged)
    assert claims["active"] is True and claims["aud"] == [BOOKINGS]
    assert claims["act"] == {"sub": mcp[0].client_id}
    assert AccessToken.objects.get(token_checksum=digest(exchanged)).resource == [BOOKINGS]
    # Bound to the bookings service only: the calendar service and the caller are told nothing.
    assert introspect(api, calendar, exchanged) == {"active": False}
    assert introspect(api, mcp, exchanged) == {"active": False}
    # And an audience the administrator did not allow is refused as a resource is.
    refused = trade(api, mcp, subject, resource=None, audience=calendar[0].resource_uri)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_target"


def test_it_lives_no_longer_than_the_subject_token(browser, api, confidential, mcp, exchange_allowed):
    subject = user_tokens(browser, api, confidential)["access_token"]
    row = AccessToken.objects.get(token_checksum=digest(subject))
    row.expires = timezone.now() + timedelta(seconds=90)
    row.save(update_fields=["expires"])
    body = trade(api, mcp, subject).json()
    assert 85 <= body["expires_in"] <= 90
    exchanged = AccessToken.objects.get(token_checksum=digest(body["access_token"]))
    assert exchanged.expires <= row.expires


def test_the_exchanged_token_is_refused_by_the_caller_and_by_this_servers_api(
    browser, api, confidential, mcp, exchange_allowed
):
    subject = user_tokens(browser, api, confidential)["access_token"]
    exchanged = trade(api, mcp, subject).json()["access_token"]
    # Bound to the bookings service only: the calling MCP server's introspection says inactive
    # (RFC 7662 §2.2, a token bound to other audiences), so it cannot be talked into accepting it.
    assert introspect(api, mcp, exchanged) == {"active": False}
    assert api.get("/v2/me", HTTP_AUTHORIZATION=f"Bearer {exchanged}").status_code == 401


def test_a_jwt_format_target_gets_a_jwt_with_act_and_a_status_bit_set_when_the_grant_ends(
    browser, api, confidential, mcp, reviewer, end_user
):
    allocator.forget()
    signing_key_create(algorithm="ES256")
    _server(reviewer, "Bookings service", BOOKINGS, token_format="jwt")
    client_exchange_targets_set(client=mcp[0], resource_uris=[BOOKINGS], actor=reviewer)
    subject = user_tokens(browser, api, confidential)["access_token"]
    exchanged = trade(api, mcp, subject, scope="BOOKING_READ").json()["access_token"]
    assert is_jwt(exchanged)
    claims = claims_of(exchanged)
    assert claims["act"] == {"sub": mcp[0].client_id}
    assert claims["client_id"] == confidential[0].client_id and claims["aud"] == BOOKINGS
    assert claims["exp"] - claims["iat"] <= 3600
    row = AccessToken.objects.get(token_checksum=digest(exchanged))
    connected_app_revoke(user=end_user, client=confidential[0])
    assert StatusRevocation.objects.filter(status_list=row.status_list, index=row.status_index).exists()


def test_a_chain_nests_act(browser, api, confidential, mcp, bookings, calendar, exchange_allowed, reviewer):
    client_exchange_targets_set(client=bookings[0], resource_uris=[CALENDAR], actor=reviewer)
    subject = user_tokens(browser, api, confidential)["access_token"]
    first = trade(api, mcp, subject).json()["access_token"]
    second = trade(api, bookings, first, resource=CALENDAR)
    assert second.status_code == 200, second.content
    # Introspected by the service it is bound to (to the bookings service it is inactive now).
    assert introspect(api, bookings, second.json()["access_token"]) == {"active": False}
    assert introspect(api, calendar, second.json()["access_token"])["act"] == {
        "sub": bookings[0].client_id,
        "act": {"sub": mcp[0].client_id},
    }


# --- the grant ends, the exchanged token ends --------------------------------------------------


def test_revoking_the_app_under_connected_apps_ends_the_exchanged_token(
    browser, api, confidential, mcp, bookings, exchange_allowed, end_user
):
    exchanged = trade(api, mcp, user_tokens(browser, api, confidential)["access_token"]).json()["access_token"]
    connected_app_revoke(user=end_user, client=confidential[0])
    assert introspect(api, bookings, exchanged) == {"active": False}


def test_rejecting_the_app_ends_the_exchanged_token(
    browser, api, confidential, mcp, bookings, exchange_allowed, reviewer
):
    exchanged = trade(api, mcp, user_tokens(browser, api, confidential)["access_token"]).json()["access_token"]
    services.client_reject(client=confidential[0], reason="abuse", actor=reviewer)
    assert introspect(api, bookings, exchanged) == {"active": False}


def test_revoking_the_apps_refresh_token_ends_the_family_with_the_exchanged_token(
    browser, api, confidential, mcp, bookings, exchange_allowed
):
    tokens = user_tokens(browser, api, confidential)
    exchanged = trade(api, mcp, tokens["access_token"]).json()["access_token"]
    client, secret = confidential
    response = client_post(api, REVOKE, client, {"token": tokens["refresh_token"]}, secret=secret)
    assert response.status_code == 200
    assert introspect(api, bookings, exchanged) == {"active": False}


def test_a_replayed_refresh_token_ends_the_exchanged_token_too(
    browser, api, confidential, mcp, bookings, exchange_allowed
):
    tokens = user_tokens(browser, api, confidential)
    client, secret = confidential
    rotated = refresh(api, client, tokens["refresh_token"], secret=secret)
    assert rotated.status_code == 200
    exchanged = trade(api, mcp, rotated.json()["access_token"]).json()["access_token"]
    assert introspect(api, bookings, exchanged)["active"] is True
    from oauthclients.models import RefreshToken

    RefreshToken.objects.filter(token_checksum=digest(tokens["refresh_token"])).update(
        revoked=timezone.now() - timedelta(minutes=5)
    )  # outside the concurrent-duplicate grace
    assert refresh(api, client, tokens["refresh_token"], secret=secret).status_code == 400
    assert introspect(api, bookings, exchanged) == {"active": False}


# --- refusals ------------------------------------------------------------------------------------


def test_an_app_cannot_exchange(browser, api, confidential, exchange_allowed):
    subject = user_tokens(browser, api, confidential)["access_token"]
    assert_token_error(trade(api, confidential, subject), "unauthorized_client")


def test_a_resource_server_allowed_no_target_cannot_exchange(browser, api, confidential, mcp, bookings):
    subject = user_tokens(browser, api, confidential)["access_token"]
    assert_token_error(trade(api, mcp, subject), "unauthorized_client")


def test_a_target_the_administrator_did_not_allow_is_invalid_target(browser, api, confidential, mcp, exchange_allowed):
    subject = user_tokens(browser, api, confidential)["access_token"]
    assert_token_error(trade(api, mcp, subject, resource=CALENDAR), "invalid_target")
    assert_token_error(trade(api, mcp, subject, resource="https://unknown.example.com/api"), "invalid_target")


def test_two_targets_are_invalid_target(browser, api, confidential, mcp, exchange_allowed):
    subject = user_tokens(browser, api, confidential)["access_token"]
    assert_token_error(trade(api, mcp, subject, audience=CALENDAR), "invalid_target")


def test_a_wrong_secret_is_invalid_client(browser, api, confidential, mcp, exchange_allowed):
    subject = user_tokens(browser, api, confidential)["access_token"]
    assert_token_error(trade(api, (mcp[0], "wrong"), subject), "invalid_client", status=401)


def test_a_subject_token_bound_to_another_service_is_invalid_grant(browser, api, confidential, mcp, exchange_allowed):
    # Bound to the bookings service itself: the MCP server could only have it by passthrough.
    subject = user_tokens(browser, api, confidential, resource=BOOKINGS)["access_token"]
    assert_token_error(trade(api, mcp, subject), "invalid_grant")


def test_an_unbound_subject_token_is_invalid_grant(browser, api, confidential, mcp, exchange_allowed):
    subject = user_tokens(browser, api, confidential, resource=None)["access_token"]
    assert_token_error(trade(api, mcp, subject), "invalid_grant")


@pytest.mark.parametrize("how", ["unknown", "expired", "refresh_token"])
def test_a_dead_subject_token_is_invalid_grant(browser, api, confidential, mcp, exchange_allowed, how):
    tokens = user_tokens(browser, api, confidential)
    subject = tokens["access_token"]
    if how == "unknown":
        subject = "x" * 43
    elif how == "expired":
        AccessToken.objects.filter(token_checksum=digest(subject)).update(expires=timezone.now())
    else:
        subject = tokens["refresh_token"]
    assert_token_error(trade(api, mcp, subject), "invalid_grant")


def test_a_deactivated_users_token_is_invalid_grant(browser, api, confidential, mcp, exchange_allowed, end_user):
    subject = user_tokens(browser, api, confidential)["access_token"]
    type(end_user).objects.filter(pk=end_user.pk).update(is_active=False)
    assert_token_error(trade(api, mcp, subject), "invalid_grant")


def test_a_wider_scope_is_invalid_scope(browser, api, confidential, mcp, exchange_allowed):
    subject = user_tokens(browser, api, confidential)["access_token"]
    assert_token_error(trade(api, mcp, subject, scope="BOOKING_READ BOOKING_WRITE"), "invalid_scope")


def test_an_unverified_apps_token_stays_under_the_ceiling_through_the_exchange(
    browser, api, confidential, mcp, exchange_allowed, settings
):
    subject = user_tokens(browser, api, confidential)["access_token"]
    type(confidential[0]).objects.filter(pk=confidential[0].pk).update(status=ClientStatus.UNVERIFIED)
    settings.OAUTH_UNVERIFIED_SCOPES = ["PROFILE_READ"]  # lowered after the grant
    assert_token_error(trade(api, mcp, subject, scope="BOOKING_READ"), "invalid_scope")
    assert trade(api, mcp, subject, scope="PROFILE_READ").status_code == 200


@pytest.mark.parametrize(
    "extra",
    [
        {"subject_token_type": "urn:ietf:params:oauth:token-type:refresh_token"},
        {"subject_token_type": None},
        {"requested_token_type": "urn:ietf:params:oauth:token-type:refresh_token"},
        {"actor_token": "abc", "actor_token_type": ACCESS_TOKEN_TYPE},
        {"resource": None},
    ],
)
def test_malformed_exchanges_are_invalid_request(browser, api, confidential, mcp, exchange_allowed, extra):
    subject = user_tokens(browser, api, confidential)["access_token"]
    assert_token_error(trade(api, mcp, subject, **extra), "invalid_request")


def test_a_missing_subject_token_is_invalid_request(api, mcp, exchange_allowed):
    assert_token_error(trade(api, mcp, ""), "invalid_request")


def test_the_subject_token_in_the_url_is_refused(api, mcp, exchange_allowed):
    client, secret = mcp
    response = api.post(
        "/v2/auth/oauth2/token?subject_token=abc",
        data=f"grant_type={TOKEN_EXCHANGE.grant_type}",
        content_type="application/x-www-form-urlencoded",
        HTTP_AUTHORIZATION=basic(client.client_id, secret),
    )
    assert_token_error(response, "invalid_request")


def test_a_resource_server_still_cannot_use_the_other_grants(api, mcp):
    client, secret = mcp
    response = token_request(
        api, {"grant_type": "refresh_token", "refresh_token": "abc"}, auth=basic(client.client_id, secret)
    )
    assert_token_error(response, "unauthorized_client")


# --- metadata and administration ----------------------------------------------------------------


def test_metadata_lists_token_exchange(api):
    assert (
        TOKEN_EXCHANGE.grant_type in api.get("/.well-known/oauth-authorization-server").json()["grant_types_supported"]
    )


def test_the_command_sets_the_targets_and_audits_it(mcp, bookings, calendar, reviewer):
    out = StringIO()
    call_command(
        "oauthclient", "--actor", "reviewer", "set-exchange-targets", mcp[0].client_id, BOOKINGS, CALENDAR, stdout=out
    )
    assert json.loads(out.getvalue())["exchange_targets"] == sorted([BOOKINGS, CALENDAR])
    assert exchange_target_uris(client=mcp[0]) == sorted([BOOKINGS, CALENDAR])
    event = ClientAuditEvent.objects.get(client=mcp[0], action=AuditAction.EXCHANGE_TARGETS_SET)
    assert event.actor == reviewer and event.detail["targets"] == sorted([BOOKINGS, CALENDAR])
    assert "allowed token exchange toward" in event.sentence()
    call_command("oauthclient", "--actor", "reviewer", "set-exchange-targets", mcp[0].client_id, stdout=StringIO())
    assert exchange_target_uris(client=mcp[0]) == []


def test_the_command_refuses_unknown_targets_and_apps(mcp, owner, reviewer):
    with pytest.raises(CommandError, match="resource URI"):
        call_command("oauthclient", "set-exchange-targets", mcp[0].client_id, BOOKINGS, stdout=StringIO())
    app = make_client(owner, approve=True).client
    with pytest.raises(UnknownExchangeTarget):
        client_exchange_targets_set(client=mcp[0], resource_uris=[MCP], actor=reviewer)
    with pytest.raises(CommandError, match="resource server"):
        call_command("oauthclient", "set-exchange-targets", app.client_id, stdout=StringIO())


def test_connected_apps_shows_the_service_the_access_goes_through(browser, api, confidential, mcp, exchange_allowed):
    subject = user_tokens(browser, api, confidential)["access_token"]
    page = browser.get(reverse("oauth:connected_apps"))
    assert b"through Scheduling MCP" not in page.content
    assert trade(api, mcp, subject).status_code == 200
    page = browser.get(reverse("oauth:connected_apps"))
    assert page.status_code == 200
    assert b"through Scheduling MCP" in page.content


def test_the_admin_adds_and_removes_a_target_through_the_audited_service(client, reviewer, mcp, bookings):
    client.force_login(reviewer)
    response = client.post(
        reverse("admin:oauthclients_exchangetarget_add"), {"client": mcp[0].pk, "target": bookings[0].pk}
    )
    assert response.status_code == 302, response.content[:2000]
    assert exchange_target_uris(client=mcp[0]) == [BOOKINGS]
    target = mcp[0].exchange_targets.get()
    response = client.post(reverse("admin:oauthclients_exchangetarget_delete", args=[target.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert exchange_target_uris(client=mcp[0]) == []
    events = ClientAuditEvent.objects.filter(client=mcp[0], action=AuditAction.EXCHANGE_TARGETS_SET)
    assert [event.actor for event in events] == [reviewer, reviewer]


def test_the_admin_offers_no_app_as_a_target(client, reviewer, mcp, owner):
    client.force_login(reviewer)
    app = make_client(owner, approve=True).client
    response = client.post(reverse("admin:oauthclients_exchangetarget_add"), {"client": mcp[0].pk, "target": app.pk})
    assert response.status_code == 200  # the form again, with its error
    assert exchange_target_uris(client=mcp[0]) == []


# --- /revoke ends what was exchanged from the token it revokes (its lineage: exchanged_from) --------


def test_revoking_the_subject_access_token_ends_the_tokens_exchanged_from_it_down_the_chain(
    browser, api, confidential, mcp, bookings, calendar, exchange_allowed, reviewer
):
    client_exchange_targets_set(client=bookings[0], resource_uris=[CALENDAR], actor=reviewer)
    tokens = user_tokens(browser, api, confidential)
    first = trade(api, mcp, tokens["access_token"]).json()["access_token"]
    second = trade(api, bookings, first, resource=CALENDAR).json()["access_token"]
    # Another subject of the same grant family, exchanged too: not descending from the one revoked.
    other_subject = user_tokens(browser, api, confidential)["access_token"]
    other = trade(api, mcp, other_subject).json()["access_token"]
    assert introspect(api, bookings, first)["active"] is True
    assert introspect(api, calendar, second)["active"] is True
    client, secret = confidential
    response = client_post(api, REVOKE, client, {"token": tokens["access_token"]}, secret=secret)
    assert response.status_code == 200
    assert introspect(api, bookings, first) == {"active": False}
    assert introspect(api, calendar, second) == {"active": False}
    assert introspect(api, bookings, other)["active"] is True


def test_revoking_an_exchanged_token_ends_what_was_exchanged_from_it_not_its_subject(
    browser, api, confidential, mcp, bookings, calendar, exchange_allowed, reviewer
):
    client_exchange_targets_set(client=bookings[0], resource_uris=[CALENDAR], actor=reviewer)
    subject = user_tokens(browser, api, confidential)["access_token"]
    first = trade(api, mcp, subject).json()["access_token"]
    second = trade(api, bookings, first, resource=CALENDAR).json()["access_token"]
    client, secret = confidential  # an exchanged token keeps the app's client_id: the app may revoke it
    assert client_post(api, REVOKE, client, {"token": first}, secret=secret).status_code == 200
    assert introspect(api, bookings, first) == {"active": False}
    assert introspect(api, calendar, second) == {"active": False}
    assert introspect(api, mcp, subject)["active"] is True
