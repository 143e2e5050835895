import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from oauthclients import services
from oauthclients.models import AuditAction, ClientAuditEvent, ClientKind, ClientSecret, ClientStatus, OAuthClient
from tests.oauthclients.service_helpers import (
    AuditWriteFailed,
    assert_audited,
    audit_actions,
    audit_events,
    break_audit,
)

VALID = {
    "name": "Calendar Sync",
    "purpose": "Syncs bookings to your calendar.",
    "website_url": "https://calendar-sync.example.com",
    "kind": ClientKind.CONFIDENTIAL,
    "redirect_uris": ["https://calendar-sync.example.com/callback", "http://localhost:8765/cb"],
    "scopes": ["PROFILE_READ", "BOOKING_READ"],
}


def create(owner, **changes):
    return services.client_create(owner=owner, **{**VALID, **changes})


def refused_fields(owner, **changes) -> dict:
    with pytest.raises(ValidationError) as exc_info:
        create(owner, **changes)
    return exc_info.value.message_dict


def test_a_new_client_is_pending_with_what_was_registered(owner):
    client = create(owner).client
    client = OAuthClient.objects.get(pk=client.pk)
    assert client.owner == owner
    assert client.status == ClientStatus.PENDING
    assert (client.reviewed_by, client.reviewed_at, client.rejection_reason) == (None, None, "")
    assert client.name == "Calendar Sync"
    assert client.purpose == "Syncs bookings to your calendar."
    assert client.website_url == "https://calendar-sync.example.com"
    assert client.client_type == ClientKind.CONFIDENTIAL
    assert client.redirect_uri_list == VALID["redirect_uris"]
    # Stored in catalog order, whatever order they were picked in.
    assert client.scope_list == ["BOOKING_READ", "PROFILE_READ"]
    assert client.is_legacy is False
    assert client.created is not None and client.updated is not None


def test_a_confidential_client_gets_exactly_one_secret_shown_once(owner):
    created = create(owner)
    assert created.secret is not None
    assert list(created.client.secrets.all()) == [created.secret.secret]
    assert created.secret.secret.matches(created.secret.plaintext)


def test_a_public_client_gets_no_secret(owner):
    created = create(owner, kind=ClientKind.PUBLIC)
    assert created.client.client_type == ClientKind.PUBLIC
    assert created.secret is None
    assert not ClientSecret.objects.filter(client=created.client).exists()


def test_a_legacy_client_has_no_scopes(owner):
    client = create(owner, scopes=[], is_legacy=True).client
    client.refresh_from_db()
    assert client.is_legacy is True
    assert client.scope_list == []


def test_it_audits_the_creation_and_the_first_secret(owner):
    since = timezone.now()
    created = create(owner)
    registered, secret_made = audit_events(created.client)
    assert_audited(registered, client=created.client, actor=owner, action=AuditAction.CLIENT_CREATED, since=since)
    assert registered.detail["scopes"] == ["BOOKING_READ", "PROFILE_READ"]
    assert registered.detail["redirect_uris"] == VALID["redirect_uris"]
    assert_audited(secret_made, client=created.client, actor=owner, action=AuditAction.SECRET_CREATED, since=since)
    assert secret_made.detail["secret_id"] == created.secret.secret.pk


def test_an_administrator_creating_for_an_owner_is_the_recorded_actor(owner, reviewer):
    created = create(owner, actor=reviewer, approve=True)
    assert created.client.owner == owner
    assert created.client.status == ClientStatus.APPROVED
    assert created.client.reviewed_by == reviewer
    assert {event.actor for event in audit_events(created.client)} == {reviewer}
    assert audit_actions(created.client) == [
        AuditAction.CLIENT_CREATED,
        AuditAction.SECRET_CREATED,
        AuditAction.CLIENT_APPROVED,
    ]


def test_it_refuses_an_unknown_kind(owner):
    assert "client_type" in refused_fields(owner, kind="hybrid")


@pytest.mark.parametrize("scopes", [[], [""]])
def test_it_refuses_empty_scopes(owner, scopes):
    assert refused_fields(owner, scopes=scopes) == {"scopes": ["Select at least one scope."]}


def test_it_refuses_an_unknown_scope(owner):
    assert refused_fields(owner, scopes=["PROFILE_READ", "EVERYTHING"]) == {"scopes": ["Unknown scope: EVERYTHING"]}


def test_it_refuses_a_legacy_client_with_scopes(owner):
    assert list(refused_fields(owner, is_legacy=True)) == ["scopes"]


def test_it_accepts_ten_redirect_uris(owner):
    uris = [f"https://calendar-sync.example.com/cb/{n}" for n in range(10)]
    assert create(owner, redirect_uris=uris).client.redirect_uri_list == uris


def test_it_refuses_an_eleventh_redirect_uri(owner):
    uris = [f"https://calendar-sync.example.com/cb/{n}" for n in range(11)]
    assert list(refused_fields(owner, redirect_uris=uris)) == ["redirect_uris"]


def test_it_refuses_a_client_without_redirect_uri(owner):
    assert list(refused_fields(owner, redirect_uris=[])) == ["redirect_uris"]


@pytest.mark.parametrize(
    "uri",
    [
        "http://calendar-sync.example.com/cb",
        "https://calendar-sync.example.com/cb#x",
        "https://u@calendar-sync.example.com/cb",
        "https://*.example.com/cb",
    ],
)
def test_it_refuses_an_invalid_redirect_uri(owner, uri):
    assert list(refused_fields(owner, redirect_uris=[uri])) == ["redirect_uris"]


@pytest.mark.parametrize(
    "field, value",
    [
        ("name", ""),
        ("name", "   "),
        ("name", "n" * 101),
        ("name", "Calendar\x00Sync"),
        # The name reaches the review mail's Subject header: no CR/LF (header injection).
        ("name", "Calendar\r\nBcc: victim@example.com"),
        ("name", "Calendar\nSync"),
        ("name", "Calendar\rSync"),
        ("name", "Calendar\u2028Sync"),
        ("name", "Calendar\x85Sync"),
        ("purpose", "p" * 2001),
        ("purpose", "Syncs\x00"),
        ("website_url", "not a url"),
        # PostgreSQL cannot store NUL in text: a ValidationError, not a DataError on save.
        ("website_url", "https://calendar-sync.example.com/\x00"),
    ],
)
def test_it_refuses_a_bad_text_field(owner, field, value):
    assert list(refused_fields(owner, **{field: value})) == [field]


def test_it_reports_every_bad_field_at_once(owner):
    errors = refused_fields(
        owner, name="", website_url="ftp://x", redirect_uris=["http://a.example/cb"], scopes=["NOPE"]
    )
    assert set(errors) == {"name", "website_url", "redirect_uris", "scopes"}


def test_a_refused_client_leaves_nothing_behind(owner):
    refused_fields(owner, scopes=[])
    assert not OAuthClient.objects.exists()
    assert not ClientAuditEvent.objects.exists()


@pytest.mark.parametrize(
    "failing_action", [AuditAction.CLIENT_CREATED, AuditAction.SECRET_CREATED, AuditAction.CLIENT_APPROVED]
)
def test_it_creates_nothing_when_an_audit_write_fails(owner, monkeypatch, failing_action):
    break_audit(monkeypatch, failing_action)
    with pytest.raises(AuditWriteFailed):
        create(owner, approve=True)
    assert not OAuthClient.objects.exists()
    assert not ClientSecret.objects.exists()
    assert not ClientAuditEvent.objects.exists()


def test_approving_at_creation_records_only_the_actor_given_as_reviewer(owner, reviewer):
    unattended = create(owner, approve=True)
    assert unattended.client.status == ClientStatus.APPROVED
    assert unattended.client.reviewed_by is None  # never the owner approving their own client
    assert ClientAuditEvent.objects.get(client=unattended.client, action=AuditAction.CLIENT_CREATED).actor == owner
    by_admin = create(owner, approve=True, actor=reviewer)
    assert by_admin.client.reviewed_by == reviewer


def test_a_bad_kind_is_reported_together_with_the_other_fields(owner):
    errors = refused_fields(owner, kind="hybrid", name="", scopes=[])
    assert {"client_type", "name", "scopes"} <= set(errors)


def test_a_multi_line_purpose_is_fine(owner):
    created = create(owner, purpose="Line one.\nLine two.")
    assert created.client.purpose == "Line one.\nLine two."
