import pytest
from django.utils import timezone

from oauthclients import services
from oauthclients.exceptions import InvalidTransition
from oauthclients.models import AuditAction, ClientStatus, OAuthClient
from tests.oauthclients.service_helpers import (
    AuditWriteFailed,
    assert_audited,
    audit_actions,
    audit_events,
    break_audit,
    reject,
    stored,
)


def test_it_approves_a_pending_client_and_records_who_and_when(client_obj, reviewer):
    since = timezone.now()
    returned = services.client_approve(client=client_obj, actor=reviewer)
    client = stored(client_obj)
    assert client.status == returned.status == ClientStatus.APPROVED
    assert client.reviewed_by == reviewer
    assert since <= client.reviewed_at <= timezone.now()
    event = audit_events(client)[-1]
    assert_audited(event, client=client, actor=reviewer, action=AuditAction.CLIENT_APPROVED, since=since)


def test_it_refuses_to_approve_a_rejected_client(client_obj, reviewer):
    rejected = reject(client_obj, reviewer)
    with pytest.raises(InvalidTransition, match="must edit and resubmit"):
        services.client_approve(client=rejected, actor=reviewer)
    client = stored(rejected)
    assert (client.status, client.rejection_reason) == (ClientStatus.REJECTED, "The website does not load.")


def test_it_refuses_to_approve_an_approved_client(approved, reviewer, owner):
    before = audit_actions(approved.client)
    with pytest.raises(InvalidTransition):
        services.client_approve(client=approved.client, actor=reviewer)
    assert stored(approved.client).reviewed_by == owner
    assert audit_actions(approved.client) == before


def test_it_decides_on_the_stored_state_not_a_stale_copy(client_obj, reviewer):
    stale = OAuthClient.objects.get(pk=client_obj.pk)
    services.client_reject(client=client_obj, actor=reviewer, reason="Spam.")
    with pytest.raises(InvalidTransition):
        services.client_approve(client=stale, actor=reviewer)
    assert stored(client_obj).status == ClientStatus.REJECTED


def test_it_stays_pending_when_the_audit_write_fails(client_obj, reviewer, monkeypatch):
    break_audit(monkeypatch)
    with pytest.raises(AuditWriteFailed):
        services.client_approve(client=client_obj, actor=reviewer)
    client = stored(client_obj)
    assert (client.status, client.reviewed_by, client.reviewed_at) == (ClientStatus.PENDING, None, None)
