import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from oauthclients import services
from oauthclients.exceptions import InvalidTransition
from oauthclients.models import AuditAction, ClientStatus
from tests.factories import make_client
from tests.oauthclients.service_helpers import (
    AuditWriteFailed,
    assert_audited,
    audit_actions,
    audit_events,
    break_audit,
    reject,
    stored,
)


@pytest.mark.parametrize("start", ["pending", "approved"])
def test_it_rejects_a_pending_or_approved_client_with_a_reason(owner, reviewer, start):
    client = make_client(owner, approve=start == "approved").client
    since = timezone.now()
    services.client_reject(client=client, actor=reviewer, reason="  Phishing site.  ")
    client = stored(client)
    assert client.status == ClientStatus.REJECTED
    assert client.rejection_reason == "Phishing site."
    assert client.reviewed_by == reviewer
    assert since <= client.reviewed_at <= timezone.now()
    event = audit_events(client)[-1]
    assert_audited(event, client=client, actor=reviewer, action=AuditAction.CLIENT_REJECTED, since=since)
    assert event.detail == {"reason": "Phishing site.", "previous": start}


@pytest.mark.parametrize("reason", ["", "   \n", None])
def test_it_refuses_to_reject_without_a_reason(approved, reviewer, reason):
    with pytest.raises(ValidationError) as exc_info:
        services.client_reject(client=approved.client, actor=reviewer, reason=reason)
    assert list(exc_info.value.message_dict) == ["reason"]
    assert stored(approved.client).status == ClientStatus.APPROVED


@pytest.mark.parametrize("reason", ["x" * 2001, "Spam\x00"])
def test_it_refuses_an_overlong_or_nul_reason(client_obj, reviewer, reason):
    # PostgreSQL cannot store NUL in text: a ValidationError, not a DataError on save.
    with pytest.raises(ValidationError) as exc_info:
        services.client_reject(client=client_obj, actor=reviewer, reason=reason)
    assert list(exc_info.value.message_dict) == ["reason"]
    assert stored(client_obj).status == ClientStatus.PENDING


def test_it_refuses_to_reject_a_rejected_client(client_obj, reviewer):
    rejected = reject(client_obj, reviewer)
    before = audit_actions(rejected)
    with pytest.raises(InvalidTransition):
        services.client_reject(client=rejected, actor=reviewer, reason="Another reason.")
    assert stored(rejected).rejection_reason == "The website does not load."
    assert audit_actions(rejected) == before


def test_it_stays_approved_when_the_audit_write_fails(approved, reviewer, owner, monkeypatch):
    break_audit(monkeypatch)
    with pytest.raises(AuditWriteFailed):
        services.client_reject(client=approved.client, actor=reviewer, reason="Phishing site.")
    client = stored(approved.client)
    assert (client.status, client.rejection_reason, client.reviewed_by) == (ClientStatus.APPROVED, "", owner)
