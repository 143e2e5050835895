"""No consent page for what the user already granted (first-hour finding 16), as GitHub and Google.

An approved client asking again for a subset of what this user granted at their last Allow, after
the client's last approval, gets a code at once; `prompt=consent`, new scopes, a revocation under
Connected apps or a new approval bring the page back.
"""

import pytest

from oauthclients import services
from oauthclients.models import OAuthClient
from oauthflows.pages.services import connected_app_revoke
from tests.oauthflows.helpers import AUTHORIZE, authorize_url, exchange, get_code, query_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def wide(owner):
    from tests.factories import make_client

    created = make_client(owner, name="Wide", scopes=["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"], approve=True)
    return created.client, created.secret.plaintext


def test_a_subset_of_what_was_granted_gets_a_code_without_the_page(browser, api, wide):
    client, secret = wide
    get_code(browser, client, scope="PROFILE_READ BOOKING_READ")  # the user allows once

    response = browser.get(authorize_url(client, scope="BOOKING_READ", state="again"))

    assert response.status_code == 302
    query = query_of(response["Location"])
    assert query["state"] == "again" and query["iss"] == "http://testserver"
    tokens = exchange(api, client, query["code"], secret=secret).json()
    assert tokens["scope"] == "BOOKING_READ"


def test_prompt_consent_shows_the_page_anyway(browser, wide):
    client, _ = wide
    get_code(browser, client, scope="PROFILE_READ")
    assert browser.get(authorize_url(client, scope="PROFILE_READ", prompt="consent")).status_code == 200


def test_a_scope_not_granted_before_shows_the_page(browser, wide):
    client, _ = wide
    get_code(browser, client, scope="PROFILE_READ")
    assert browser.get(authorize_url(client, scope="PROFILE_READ BOOKING_WRITE")).status_code == 200


def test_the_last_allow_counts_not_the_union_of_all(browser, wide):
    client, _ = wide
    get_code(browser, client, scope="PROFILE_READ BOOKING_READ")
    get_code(browser, client, scope="PROFILE_READ")  # the user's latest decision: less
    assert browser.get(authorize_url(client, scope="BOOKING_READ")).status_code == 200


def test_after_revoking_under_connected_apps_the_page_is_back(browser, wide, end_user):
    client, _ = wide
    get_code(browser, client, scope="PROFILE_READ")
    connected_app_revoke(user=end_user, client=client)
    assert browser.get(authorize_url(client, scope="PROFILE_READ")).status_code == 200


def test_a_new_approval_since_the_consent_shows_the_page(browser, wide, owner, reviewer):
    client, _ = wide
    get_code(browser, client, scope="PROFILE_READ")
    edited = services.client_update(
        client=OAuthClient.objects.get(pk=client.pk),
        actor=owner,
        name="Wide Renamed",
        purpose=client.purpose,
        website_url=client.website_url,
        redirect_uris=client.redirect_uri_list,
        scopes=client.scope_list,
    )
    services.client_approve(client=edited, actor=reviewer, expected_digest=edited.review_digest())
    assert browser.get(authorize_url(client, scope="PROFILE_READ")).status_code == 200


def test_another_user_still_sees_the_page(browser, wide, other_developer):
    from django.test import Client

    client, _ = wide
    get_code(browser, client, scope="PROFILE_READ")
    other = Client()
    other.force_login(other_developer)
    assert other.get(authorize_url(client, scope="PROFILE_READ")).status_code == 200


def test_a_deny_is_not_a_standing_consent(browser, wide):
    client, _ = wide
    url = authorize_url(client, scope="PROFILE_READ")
    browser.get(url)
    browser.post(url.replace(AUTHORIZE + "?", AUTHORIZE + "/deny?", 1))
    assert browser.get(url).status_code == 200


def test_the_granted_scopes_are_state_of_the_consent_not_of_the_audit_trail(browser, wide):
    """STYLE "what not to copy": the audit trail's JSON is history; a change to it (or its loss)
    must not turn skipping on or off."""
    from oauthclients.models import ClientAuditEvent
    from tokens.models import Consent

    client, _ = wide
    get_code(browser, client, scope="PROFILE_READ BOOKING_READ")
    consent = Consent.objects.get(client=client)
    assert consent.scopes == ["PROFILE_READ", "BOOKING_READ"] and consent.unrestricted is False

    ClientAuditEvent.objects.filter(client=client).update(detail={})
    assert browser.get(authorize_url(client, scope="BOOKING_READ")).status_code == 302

    Consent.objects.filter(client=client).update(scope="PROFILE_READ")
    assert browser.get(authorize_url(client, scope="BOOKING_READ")).status_code == 200


def test_the_migration_fills_the_columns_from_the_latest_grant_in_the_audit_trail(browser, wide, end_user):
    import importlib

    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    from oauthclients.models import AuditAction, ClientAuditEvent
    from tokens.models import Consent

    client, _ = wide
    get_code(browser, client, scope="PROFILE_READ BOOKING_READ")
    ClientAuditEvent.objects.create(
        client=client,
        actor=end_user,
        user=end_user,
        action=AuditAction.GRANT_AUTHORIZED,
        detail={"scopes": ["BOOKING_READ"]},
    )
    Consent.objects.update(scope="", unrestricted=False)  # as the rows were before the migration

    migration = importlib.import_module("oauthclients.migrations.0013_consent_granted_scopes")
    # The models as that migration saw them (the consent was the registry's then, tokens' since).
    state = MigrationLoader(connection).project_state(("oauthclients", "0013_consent_granted_scopes"))
    migration.fill_from_the_audit_trail(state.apps, None)

    consent = Consent.objects.get(client=client)
    assert consent.scopes == ["BOOKING_READ"] and consent.unrestricted is False
