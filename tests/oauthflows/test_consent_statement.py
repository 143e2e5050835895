"""OAUTH_CONSENT_STATEMENT: on PostgreSQL the Allow POST writes code, consent and audit row in one
statement; off (a bench trial compares the two), the ORM writes them — with the same rows."""

import pytest
from django.db import connection

from oauthclients.models import AuditAction, ClientAuditEvent, Grant
from tests.oauthflows.helpers import get_code
from tokens.consents import consent_records_with_code
from tokens.models import Consent


@pytest.mark.parametrize("statement", [True, False])
def test_allow_writes_the_same_rows_either_way(browser, confidential, end_user, settings, statement):
    settings.OAUTH_CONSENT_STATEMENT = statement
    assert consent_records_with_code() is (statement and connection.vendor == "postgresql")
    client, _secret = confidential
    get_code(browser, client, scope="PROFILE_READ BOOKING_READ")
    consent = Consent.objects.get(user=end_user, client=client)
    assert consent.first_authorized_at is not None
    event = ClientAuditEvent.objects.get(client=client, user=end_user, action=AuditAction.GRANT_AUTHORIZED)
    assert set(event.detail["scopes"]) == {"PROFILE_READ", "BOOKING_READ"}
    grant = Grant.objects.get(application=client, user=end_user)
    assert set(grant.scope.split()) == {
        "BOOKING_READ",
        "PROFILE_READ",
    }
