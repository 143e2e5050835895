import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from oauthclients import services
from oauthclients.models import AuditAction, ClientStatus, OAuthClient
from tests.factories import make_client
from tests.oauthclients.service_helpers import (
    AuditWriteFailed,
    assert_audited,
    audit_actions,
    audit_events,
    break_audit,
    make_legacy,
    reject,
    stored,
)

CALLBACK = "https://calendar-sync.example.com/callback"
LOOPBACK = "http://127.0.0.1:8765/cb"


@pytest.fixture
def narrowable_client(owner):
    """Approved, with two redirect URIs and two scopes, so that each can be narrowed."""
    return make_client(
        owner, approve=True, redirect_uris=[CALLBACK, LOOPBACK], scopes=["PROFILE_READ", "BOOKING_READ"]
    ).client


def fields(narrowable_client) -> dict:
    """What an owner edits, as client_update takes it."""
    return {
        "name": narrowable_client.name,
        "purpose": narrowable_client.purpose,
        "website_url": narrowable_client.website_url,
        "redirect_uris": narrowable_client.redirect_uri_list,
        "scopes": narrowable_client.scope_list,
    }


def edit(narrowable_client, actor, **changes) -> OAuthClient:
    """client_update with the client's current values, except `changes`."""
    return services.client_update(client=narrowable_client, actor=actor, **{**fields(narrowable_client), **changes})


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"name": "Calendar Sync Pro"}, "name"),
        ({"website_url": "https://evil.example.net"}, "website_url"),
        ({"redirect_uris": [CALLBACK, LOOPBACK, "https://calendar-sync.example.com/cb2"]}, "redirect_uris"),
        ({"redirect_uris": [CALLBACK, "http://127.0.0.1:9999/cb"]}, "redirect_uris"),
        ({"scopes": ["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"]}, "scopes"),
        ({"scopes": ["PROFILE_READ", "SCHEDULE_READ"]}, "scopes"),
    ],
)
def test_an_edit_users_would_notice_sends_an_approved_client_back_to_review(narrowable_client, owner, changes, reason):
    since = timezone.now()
    edit(narrowable_client, owner, **changes)
    narrowable_client = stored(narrowable_client)
    assert narrowable_client.status == ClientStatus.PENDING
    assert (narrowable_client.reviewed_by, narrowable_client.reviewed_at) == (None, None)
    *_, updated, resubmitted = audit_events(narrowable_client)
    assert_audited(updated, client=narrowable_client, actor=owner, action=AuditAction.CLIENT_UPDATED, since=since)
    assert_audited(
        resubmitted, client=narrowable_client, actor=owner, action=AuditAction.CLIENT_RESUBMITTED, since=since
    )
    assert resubmitted.detail["because"] == [reason]


@pytest.mark.parametrize(
    "changes, changed",
    [
        ({"redirect_uris": [CALLBACK]}, "redirect_uris"),
        ({"redirect_uris": [LOOPBACK, CALLBACK]}, "redirect_uris"),
        ({"scopes": ["PROFILE_READ"]}, "scopes"),
        ({"purpose": "Now also shows your schedule."}, "purpose"),
    ],
)
def test_a_narrowing_or_purpose_only_edit_keeps_the_approval(narrowable_client, owner, changes, changed):
    expected = {**fields(narrowable_client), **changes}
    edit(narrowable_client, owner, **changes)
    narrowable_client = stored(narrowable_client)
    assert narrowable_client.status == ClientStatus.APPROVED
    assert narrowable_client.reviewed_at is not None
    assert fields(narrowable_client) == expected
    assert audit_actions(narrowable_client)[-1] == AuditAction.CLIENT_UPDATED
    assert audit_events(narrowable_client)[-1].detail["changed"] == [changed]


def test_the_edit_is_saved(narrowable_client, owner):
    edit(narrowable_client, owner, name="  Calendar Sync Pro ", scopes=["SCHEDULE_READ"], redirect_uris=[LOOPBACK])
    narrowable_client = stored(narrowable_client)
    assert narrowable_client.name == "Calendar Sync Pro"
    assert narrowable_client.scope_list == ["SCHEDULE_READ"]
    assert narrowable_client.redirect_uri_list == [LOOPBACK]


def test_an_edit_that_changes_nothing_writes_no_audit_event(narrowable_client, owner):
    before = audit_actions(narrowable_client)
    edit(
        narrowable_client,
        owner,
        name=f" {narrowable_client.name} ",
        scopes=list(reversed(narrowable_client.scope_list)),
    )
    assert audit_actions(narrowable_client) == before
    assert stored(narrowable_client).status == ClientStatus.APPROVED


def test_editing_a_rejected_client_resubmits_it(client_obj, owner, reviewer):
    rejected = reject(client_obj, reviewer)
    edit(rejected, owner, purpose="We fixed the website.")
    client = stored(rejected)
    assert client.status == ClientStatus.PENDING
    assert (client.rejection_reason, client.reviewed_by, client.reviewed_at) == (
        "",
        None,
        None,
    )
    assert audit_actions(client)[-2:] == [AuditAction.CLIENT_UPDATED, AuditAction.CLIENT_RESUBMITTED]


def test_editing_a_pending_client_keeps_it_pending(client_obj, owner):
    edit(client_obj, owner, name="Renamed")
    assert stored(client_obj).status == ClientStatus.PENDING
    assert AuditAction.CLIENT_RESUBMITTED not in audit_actions(client_obj)


def test_selecting_scopes_on_a_legacy_client_keeps_it_approved_and_ends_legacy(owner):
    legacy = make_legacy(owner)
    edit(legacy, owner, scopes=["ORG_BOOKING_WRITE", "PROFILE_READ"])
    client = stored(legacy)
    assert client.status == ClientStatus.APPROVED
    assert client.is_legacy is False
    assert client.scope_list == ["PROFILE_READ", "ORG_BOOKING_WRITE"]
    assert audit_events(client)[-1].detail["was_legacy"] is True


def test_editing_a_legacy_client_without_scopes_keeps_it_legacy(owner):
    legacy = make_legacy(owner)
    edit(legacy, owner, purpose="Still unscoped.")
    client = stored(legacy)
    assert (client.is_legacy, client.scope_list, client.purpose) == (
        True,
        [],
        "Still unscoped.",
    )


def test_it_refuses_to_drop_every_scope(narrowable_client, owner):
    with pytest.raises(ValidationError) as exc_info:
        edit(narrowable_client, owner, scopes=[])
    assert list(exc_info.value.message_dict) == ["scopes"]
    assert stored(narrowable_client).scope_list == ["BOOKING_READ", "PROFILE_READ"]


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"redirect_uris": [f"https://calendar-sync.example.com/cb/{n}" for n in range(11)]}, "redirect_uris"),
        ({"redirect_uris": ["http://calendar-sync.example.com/cb"]}, "redirect_uris"),
        ({"scopes": ["PROFILE_READ", "ROOT"]}, "scopes"),
        ({"name": ""}, "name"),
    ],
)
def test_a_refused_edit_changes_nothing(narrowable_client, owner, changes, field):
    before = audit_actions(narrowable_client)
    with pytest.raises(ValidationError) as exc_info:
        edit(narrowable_client, owner, **{"name": "Renamed", **changes})
    assert field in exc_info.value.message_dict
    narrowable_client = stored(narrowable_client)
    assert (narrowable_client.name, narrowable_client.status) == ("Calendar Sync", ClientStatus.APPROVED)
    assert audit_actions(narrowable_client) == before


def test_it_decides_on_the_stored_state_not_a_stale_copy(client_obj, owner, reviewer):
    stale = OAuthClient.objects.get(pk=client_obj.pk)
    services.client_approve(client=client_obj, actor=reviewer)
    edit(stale, owner, purpose="Purpose only.")
    # Saving the stale copy's `pending` would silently undo the approval.
    assert stored(client_obj).status == ClientStatus.APPROVED


@pytest.mark.parametrize("failing_action", [AuditAction.CLIENT_UPDATED, AuditAction.CLIENT_RESUBMITTED])
def test_it_changes_nothing_when_an_audit_write_fails(narrowable_client, owner, monkeypatch, failing_action):
    before = audit_actions(narrowable_client)
    break_audit(monkeypatch, failing_action)
    with pytest.raises(AuditWriteFailed):
        edit(narrowable_client, owner, name="Calendar Sync Pro")
    narrowable_client = stored(narrowable_client)
    assert (narrowable_client.name, narrowable_client.status) == ("Calendar Sync", ClientStatus.APPROVED)
    assert audit_actions(narrowable_client) == before
