# ruff: noqa: F401, F811 - the ID-JAG tests' organization and linked person, imported as fixtures
"""Where a token comes from (tokens.services.access_token_issue, the one writer) and what ends it:
ending a durable ancestor — the user's grant, the refresh family, the organization's assertions —
ends every token descending from it, whatever the grant, exchanged tokens (RFC 8693) included; a
routine refresh of the token one was exchanged from does not (SECURITY.md, "One service acting for
a user at another").

Every test runs with both lookups of the token exchange (oauthflows.token.exchange: PostgreSQL's one
statement, and the ORM's queries; on SQLite both runs take the ORM)."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from oauthclients.exchangetargets import client_exchange_targets_set
from oauthclients.models import AccessToken, RefreshToken, digest
from signing.keys import signing_key_create
from signing.statuslist import allocator
from tests.factories import make_client
from tests.oauthclients.service_helpers import status_bit
from tests.oauthflows.helpers import refresh
from tests.oauthflows.test_idjag import claims_for, grant, idjag_org, linked
from tests.oauthflows.test_token_exchange import (
    BOOKINGS,
    CALENDAR,
    MCP,
    _server,
    introspect,
    trade,
    user_tokens,
)
from tests.signing.test_jwt_access_tokens import is_jwt


@pytest.fixture(autouse=True, params=["one statement", "orm"])
def lookup(request, settings):
    """The exchange's lookup: one statement on PostgreSQL (OAUTH_FAST_REDEMPTION), or the ORM's."""
    settings.OAUTH_FAST_REDEMPTION = request.param == "one statement"
    return request.param


@pytest.fixture
def token_format():
    """The resource servers' token format; the JWT tests override it."""
    return "opaque"


@pytest.fixture
def mcp_in_format(reviewer, token_format):
    return _server(reviewer, "Scheduling MCP", MCP, token_format=token_format)


@pytest.fixture
def bookings_in_format(reviewer, token_format):
    return _server(reviewer, "Bookings service", BOOKINGS, token_format=token_format)


@pytest.fixture
def calendar(reviewer):
    return _server(reviewer, "Calendar service", CALENDAR)


@pytest.fixture
def reading_agent(owner):
    created = make_client(owner, name="Acme Agent", scopes=["PROFILE_READ", "BOOKING_READ"], approve=True)
    return created.client, created.secret.plaintext


@pytest.fixture
def exchanges(mcp_in_format, bookings_in_format, calendar, reviewer):
    """The scheduling MCP server may exchange toward the bookings service, which may toward the calendar."""
    client_exchange_targets_set(client=mcp_in_format[0], resource_uris=[BOOKINGS], actor=reviewer)
    client_exchange_targets_set(client=bookings_in_format[0], resource_uris=[CALENDAR], actor=reviewer)


@pytest.fixture
def assertions(idjag_org, reading_agent):
    """ACME's identity provider may grant the agent BOOKING_READ by assertion (ID-JAG)."""
    call_command(
        "identityprovider", "allow-assertions", "ACME", "--client", reading_agent[0].client_id,
        "--scope", "BOOKING_READ", stdout=StringIO(),
    )  # fmt: skip


def asserted_token(api, idjag_org, reading_agent, settings) -> str:
    """An ID-JAG token of the agent for the linked person, bound to the scheduling MCP server."""
    response = grant(api, reading_agent, idjag_org.assertion(**claims_for(reading_agent, settings)))
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


def traded(api, caller, subject, **extra) -> str:
    response = trade(api, caller, subject, **extra)
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


def row(token: str) -> AccessToken:
    return AccessToken.objects.get(token_checksum=digest(token))


def deny(idjag_org, reading_agent) -> dict:
    out = StringIO()
    call_command("identityprovider", "deny-assertions", "ACME", "--client", reading_agent[0].client_id, stdout=out)
    return json.loads(out.getvalue())["access_tokens_ended"]


# --- what each grant records -------------------------------------------------------------------------


def test_each_grant_records_where_its_token_comes_from(
    browser,
    api,
    settings,
    confidential,
    idjag_org,
    linked,
    reading_agent,
    assertions,
    mcp_in_format,
    bookings_in_format,
    exchanges,
):
    # A code's token belongs to its grant's refresh token family.
    tokens = user_tokens(browser, api, confidential)
    parent = row(tokens["access_token"])
    family = RefreshToken.objects.get(token_checksum=digest(tokens["refresh_token"])).token_family
    assert family is not None
    assert (parent.token_family, parent.assertion_issuer, parent.exchanged_from_id) == (family, "", None)
    # A refresh's token stays in the family.
    renewed = refresh(api, confidential[0], tokens["refresh_token"], secret=confidential[1]).json()
    assert row(renewed["access_token"]).token_family == family
    # An exchanged token carries its subject's family, and names the subject for the audit.
    exchanged = row(traded(api, mcp_in_format, renewed["access_token"]))
    assert (exchanged.token_family, exchanged.exchanged_from_id) == (family, row(renewed["access_token"]).pk)
    assert exchanged.act == {"sub": mcp_in_format[0].client_id} and exchanged.assertion_issuer == ""
    # An assertion's token has no family but its issuer; a token exchanged from it carries both marks.
    asserted = row(asserted_token(api, idjag_org, reading_agent, settings))
    assert (asserted.token_family, asserted.assertion_issuer, asserted.exchanged_from_id) == (
        None,
        idjag_org.issuer,
        None,
    )
    from_assertion = row(traded(api, mcp_in_format, asserted_token(api, idjag_org, reading_agent, settings)))
    assert from_assertion.assertion_issuer == idjag_org.issuer and from_assertion.token_family is None
    assert from_assertion.exchanged_from_id is not None and from_assertion.application == reading_agent[0]


# --- the organization's deny ends what its assertions granted, and what was exchanged from it ----------


def test_deny_assertions_ends_the_token_exchanged_from_an_assertions_token(
    api, settings, idjag_org, linked, reading_agent, assertions, mcp_in_format, bookings_in_format, exchanges
):
    asserted = asserted_token(api, idjag_org, reading_agent, settings)
    exchanged = traded(api, mcp_in_format, asserted)
    assert introspect(api, mcp_in_format, asserted)["active"] is True
    assert introspect(api, bookings_in_format, exchanged)["active"] is True
    assert deny(idjag_org, reading_agent) == {reading_agent[0].client_id: 2}
    # The attack of the red team: the exchanged token stayed active for up to its 30 minutes.
    assert introspect(api, mcp_in_format, asserted) == {"active": False}
    assert introspect(api, bookings_in_format, exchanged) == {"active": False}


def test_deny_assertions_ends_a_whole_chain_of_exchanges(
    api, settings, idjag_org, linked, reading_agent, assertions, mcp_in_format, bookings_in_format, calendar, exchanges
):
    first = traded(api, mcp_in_format, asserted_token(api, idjag_org, reading_agent, settings))
    second = traded(api, bookings_in_format, first, resource=CALENDAR)
    assert introspect(api, calendar, second)["active"] is True
    assert deny(idjag_org, reading_agent) == {reading_agent[0].client_id: 3}
    assert introspect(api, calendar, second) == {"active": False}


def test_deny_assertions_leaves_what_the_user_granted_the_same_app(
    browser, api, settings, idjag_org, linked, reading_agent, assertions, mcp_in_format, bookings_in_format, exchanges
):
    consented = user_tokens(browser, api, reading_agent, scope="BOOKING_READ")
    exchanged = traded(api, mcp_in_format, consented["access_token"])
    traded(api, mcp_in_format, asserted_token(api, idjag_org, reading_agent, settings))
    assert deny(idjag_org, reading_agent) == {reading_agent[0].client_id: 2}
    assert introspect(api, mcp_in_format, consented["access_token"])["active"] is True
    assert introspect(api, bookings_in_format, exchanged)["active"] is True


@pytest.mark.parametrize("token_format", ["jwt"])
def test_deny_assertions_sets_the_status_bits_of_jwts_exchanged_from_an_assertions_token(
    api,
    settings,
    idjag_org,
    linked,
    reading_agent,
    assertions,
    mcp_in_format,
    bookings_in_format,
    exchanges,
    token_format,
):
    allocator.forget()
    signing_key_create(algorithm="ES256")
    asserted = asserted_token(api, idjag_org, reading_agent, settings)
    exchanged = traded(api, mcp_in_format, asserted)
    assert is_jwt(asserted) and is_jwt(exchanged)
    places = [(row(token).status_list, row(token).status_index) for token in (asserted, exchanged)]
    assert [status_bit(*place) for place in places] == [0, 0]
    deny(idjag_org, reading_agent)
    assert [status_bit(*place) for place in places] == [1, 1]


# --- the user's revocation under Connected apps ----------------------------------------------------


def test_revoking_the_app_under_connected_apps_ends_the_token_exchanged_from_an_assertions_token(
    browser, api, settings, idjag_org, linked, reading_agent, assertions, mcp_in_format, bookings_in_format, exchanges
):
    asserted = asserted_token(api, idjag_org, reading_agent, settings)
    exchanged = traded(api, mcp_in_format, asserted)
    response = browser.post(f"/settings/apps/{reading_agent[0].client_id}/revoke/")
    assert response.status_code == 303 and response["Location"] == "/settings/apps/"
    assert introspect(api, mcp_in_format, asserted) == {"active": False}
    assert introspect(api, bookings_in_format, exchanged) == {"active": False}


# --- the refresh family: a replay ends it, a routine refresh does not ---------------------------------


def test_a_routine_refresh_leaves_the_exchanged_token_and_a_replay_ends_it(
    browser, api, confidential, mcp_in_format, bookings_in_format, exchanges
):
    client, secret = confidential
    tokens = user_tokens(browser, api, confidential)
    parent = row(tokens["access_token"])
    exchanged = traded(api, mcp_in_format, tokens["access_token"])
    renewed = refresh(api, client, tokens["refresh_token"], secret=secret)
    assert renewed.status_code == 200
    # The refresh ended the subject's row; the exchanged token follows the family, alive, and still
    # names the row it came from.
    assert not AccessToken.objects.filter(pk=parent.pk).exists()
    assert introspect(api, bookings_in_format, exchanged)["active"] is True
    assert row(exchanged).exchanged_from_id == parent.pk
    # The rotated refresh token presented again, outside the concurrent-duplicate grace: a replay.
    RefreshToken.objects.filter(token_checksum=digest(tokens["refresh_token"])).update(
        revoked=timezone.now() - timedelta(minutes=5)
    )
    assert refresh(api, client, tokens["refresh_token"], secret=secret).status_code == 400
    assert introspect(api, bookings_in_format, exchanged) == {"active": False}
    assert not AccessToken.objects.filter(token_checksum=digest(renewed.json()["access_token"])).exists()
