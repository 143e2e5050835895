"""Client and grant events: rows in the admin, Django signals, one JSON log line each — no credentials."""

import json
import logging

import pytest
from django.test import Client

from oauthclients import services
from oauthclients.audit import audit_event_recorded
from oauthclients.models import AuditAction, ClientAuditEvent
from tests.factories import make_client
from tests.oauthflows.helpers import assert_tokens, authorize_url, consent, exchange, get_code, refresh


@pytest.fixture
def announced():
    events = []

    def receiver(sender, event, **kwargs):
        events.append(event)

    audit_event_recorded.connect(receiver)
    yield events
    audit_event_recorded.disconnect(receiver)


def actions(client):
    return list(ClientAuditEvent.objects.filter(client=client).order_by("id").values_list("action", flat=True))


def test_authorize_deny_revoke_and_replay_are_audited(
    browser, api, confidential, end_user, django_capture_on_commit_callbacks
):
    client, secret = confidential
    with django_capture_on_commit_callbacks(execute=True):
        code = get_code(browser, client, scope="PROFILE_READ")
        tokens = assert_tokens(exchange(api, client, code, secret=secret), "PROFILE_READ")
        consent(browser, authorize_url(client), decision="deny")
        rotated = refresh(api, client, tokens["refresh_token"], secret=secret)
        assert rotated.status_code == 200
        refresh(api, client, tokens["refresh_token"], secret=secret)  # replay: family revoked
        assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
        assert browser.post(f"/settings/apps/{client.client_id}/revoke/").status_code == 303
    grant_events = [a for a in actions(client) if a.startswith("grant.")]
    assert grant_events == [
        AuditAction.GRANT_AUTHORIZED,
        AuditAction.GRANT_DENIED,
        AuditAction.FAMILY_REVOKED,
        AuditAction.GRANT_AUTHORIZED,
        AuditAction.ACCESS_REVOKED,
    ]
    for event in ClientAuditEvent.objects.filter(client=client, action__startswith="grant."):
        assert event.user == end_user
    replay = ClientAuditEvent.objects.get(client=client, action=AuditAction.FAMILY_REVOKED)
    assert replay.actor is None and "replayed" in replay.detail["reason"]


def test_a_replayed_code_is_audited(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    exchange(api, client, code, secret=secret)
    exchange(api, client, code, secret=secret)
    assert ClientAuditEvent.objects.get(client=client, action=AuditAction.FAMILY_REVOKED).detail == {
        "reason": "authorization code replayed"
    }


def test_a_plain_invalid_refresh_token_is_not_a_replay_event(api, confidential):
    client, secret = confidential
    refresh(api, client, "unknown", secret=secret)
    assert not ClientAuditEvent.objects.filter(action=AuditAction.FAMILY_REVOKED).exists()


def test_events_are_signalled_after_commit_and_logged_as_json(
    owner, reviewer, announced, caplog, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.INFO, logger="audit")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        created = make_client(owner)
        assert announced == []  # nothing is announced before the transaction commits
    for callback in callbacks:
        callback()
    with django_capture_on_commit_callbacks(execute=True):
        services.client_approve(client=created.client, actor=reviewer)
    kinds = [event.action for event in announced]
    assert kinds == [AuditAction.CLIENT_CREATED, AuditAction.SECRET_CREATED, AuditAction.CLIENT_APPROVED]
    lines = [json.loads(record.getMessage()) for record in caplog.records if record.name == "audit"]
    assert [line["event"] for line in lines] == kinds
    assert lines[-1]["client_id"] == created.client.client_id and lines[-1]["actor_id"] == reviewer.pk
    secret = created.secret.plaintext
    assert all(secret not in record.getMessage() and secret[3:] not in record.getMessage() for record in caplog.records)


def test_a_rolled_back_change_is_never_announced(owner, announced, django_capture_on_commit_callbacks):
    from django.db import transaction

    with django_capture_on_commit_callbacks(execute=True):
        try:
            with transaction.atomic():
                make_client(owner)
                raise RuntimeError("boom")
        except RuntimeError:
            pass
    assert announced == []


def test_the_admin_lists_and_filters_grant_events(browser, api, confidential, reviewer):
    client, secret = confidential
    exchange(api, client, get_code(browser, client), secret=secret)
    admin = Client()
    admin.force_login(reviewer)
    page = admin.get("/admin/oauthclients/clientauditevent/?action=grant.authorized")
    assert page.status_code == 200
    shown = list(page.context["cl"].result_list)
    assert shown and {event.action for event in shown} == {AuditAction.GRANT_AUTHORIZED}
    assert "User authorized the app" in page.content.decode()


def test_an_authorization_is_audited_with_its_scopes_and_announced(
    browser, confidential, end_user, caplog, django_capture_on_commit_callbacks
):
    # On PostgreSQL the consent and its audit row are one statement (oauthflows.pages.services); the
    # row, the signal and the log line must be what audit_record makes everywhere else.
    import json
    import logging

    client, _secret = confidential
    with caplog.at_level(logging.INFO, logger="audit"), django_capture_on_commit_callbacks(execute=True):
        get_code(browser, client, scope="PROFILE_READ BOOKING_READ")
    event = ClientAuditEvent.objects.get(client=client, action=AuditAction.GRANT_AUTHORIZED)
    assert event.detail == {"scopes": ["PROFILE_READ", "BOOKING_READ"], "unrestricted": False}
    assert event.actor == end_user and event.user == end_user
    (line,) = [json.loads(r.getMessage()) for r in caplog.records if r.name == "audit"]
    assert line["event"] == AuditAction.GRANT_AUTHORIZED and line["client_id"] == client.client_id
    assert line["detail"] == event.detail and line["user_id"] == end_user.pk


def test_consent_record_writes_a_code_with_the_consent_only_where_one_statement_can(confidential, end_user, settings):
    settings.OAUTH_CONSENT_STATEMENT = True  # the default (docs/performance.md, "The hot paths", 7), stated
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    from oauthclients.models import Grant
    from tokens.consents import consent_record, consent_records_with_code
    from tokens.models import Consent

    client, _secret = confidential
    code = Grant(
        application=client,
        user=end_user,
        code="digest",
        expires=timezone.now() + timedelta(minutes=1),
        redirect_uri=client.redirect_uri_list[0],
        scope="PROFILE_READ",
    )
    assert consent_records_with_code() is (connection.vendor == "postgresql")
    if connection.vendor == "postgresql":
        consent_record(user=end_user, client=client, scopes=["PROFILE_READ"], code=code)
        assert Grant.objects.get(pk=code.pk).code == "digest" and Consent.objects.filter(client=client).exists()
    else:
        with pytest.raises(ValueError, match="PostgreSQL only"):
            consent_record(user=end_user, client=client, scopes=["PROFILE_READ"], code=code)
        assert not Grant.objects.exists() and not Consent.objects.exists()
