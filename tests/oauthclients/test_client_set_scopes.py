import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from oauthclients import services
from oauthclients.models import AuditAction, ClientStatus
from tests.oauthclients.service_helpers import (
    AuditWriteFailed,
    assert_audited,
    audit_actions,
    audit_events,
    break_audit,
    make_legacy,
    stored,
)


def test_narrowing_keeps_the_approval(approved, owner):
    since = timezone.now()
    services.client_set_scopes(client=approved.client, scopes=["PROFILE_READ"], actor=owner)
    client = stored(approved.client)
    assert (client.status, client.scope_list) == (ClientStatus.APPROVED, ["PROFILE_READ"])
    event = audit_events(client)[-1]
    assert_audited(event, client=client, actor=owner, action=AuditAction.CLIENT_SCOPES_SET, since=since)
    assert event.detail["scopes"] == ["PROFILE_READ"]


@pytest.mark.parametrize("scopes", [["PROFILE_READ", "BOOKING_READ", "ORG_BOOKING_READ"], ["SCHEDULE_READ"]])
def test_widening_or_swapping_sends_an_approved_client_back_to_review(approved, owner, scopes):
    services.client_set_scopes(client=approved.client, scopes=scopes, actor=owner)
    client = stored(approved.client)
    assert client.status == ClientStatus.PENDING
    assert audit_actions(client)[-2:] == [AuditAction.CLIENT_SCOPES_SET, AuditAction.CLIENT_RESUBMITTED]


def test_selecting_scopes_migrates_a_legacy_client_and_keeps_it_approved(owner):
    legacy = make_legacy(owner)
    # Spec §5.8 step b: a legacy client's tokens were unrestricted, so any selection narrows.
    services.client_set_scopes(client=legacy, scopes=["BOOKING_READ"], actor=owner)
    client = stored(legacy)
    assert (client.status, client.is_legacy, client.scope_list) == (ClientStatus.APPROVED, False, ["BOOKING_READ"])
    assert audit_events(client)[-1].detail["was_legacy"] is True


def test_setting_the_same_scopes_writes_no_audit_event(approved, owner):
    before = audit_actions(approved.client)
    services.client_set_scopes(client=approved.client, scopes=["BOOKING_READ", "PROFILE_READ"], actor=owner)
    assert audit_actions(approved.client) == before


@pytest.mark.parametrize("scopes, message", [([], "Select at least one scope."), (["NOPE"], "Unknown scope: NOPE")])
def test_it_refuses_empty_or_unknown_scopes(owner, scopes, message):
    legacy = make_legacy(owner)
    with pytest.raises(ValidationError) as exc_info:
        services.client_set_scopes(client=legacy, scopes=scopes, actor=owner)
    assert exc_info.value.message_dict == {"scopes": [message]}
    assert (stored(legacy).is_legacy, stored(legacy).scope_list) == (True, [])


def test_it_changes_nothing_when_the_audit_write_fails(owner, monkeypatch):
    legacy = make_legacy(owner)
    before = audit_actions(legacy)
    break_audit(monkeypatch)
    with pytest.raises(AuditWriteFailed):
        services.client_set_scopes(client=legacy, scopes=["BOOKING_READ"], actor=owner)
    assert (stored(legacy).is_legacy, stored(legacy).scope_list) == (True, [])
    assert audit_actions(legacy) == before
