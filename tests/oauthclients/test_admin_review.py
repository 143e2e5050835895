"""Reviewing a client from its admin page: Approve / Reject with confirmation, and what to read first."""

from datetime import timedelta

import pytest
from bs4 import BeautifulSoup
from django.urls import reverse
from django.utils import timezone

from oauthclients import services
from oauthclients.models import ClientAuditEvent, ClientStatus, OAuthClient
from tests.factories import make_client, make_user
from tests.security.credentials import digests_on_page

pytestmark = pytest.mark.django_db


def change_url(app):
    return reverse("admin:oauthclients_oauthclient_change", args=[app.pk])


def soup(response):
    assert response.status_code == 200, response.status_code
    return BeautifulSoup(response.content, "html.parser")


def test_a_pending_client_page_offers_approve_and_reject(staff, owner):
    app = make_client(owner, scopes=["PROFILE_READ", "BOOKING_WRITE", "ORG_BOOKING_READ"]).client
    page = soup(staff.get(change_url(app)))

    buttons = {a.get_text(strip=True): a["href"] for a in page.select(".review-actions a")}
    assert buttons == {
        "Approve…": reverse("admin:oauthclients_oauthclient_approve", args=[app.pk]),
        "Reject with a reason…": reverse("admin:oauthclients_oauthclient_reject", args=[app.pk]),
    }
    scopes = page.select_one(".scope-review").get_text(" ", strip=True)
    assert "Add guests to, change the location of" in scopes and "can change" in scopes
    assert "organization-wide" in scopes
    owner_link = page.select_one(".field-owner_link a")
    assert owner_link["href"] == reverse("admin:auth_user_change", args=[owner.pk])


def test_approve_asks_for_confirmation_then_approves(staff, owner):
    app = make_client(owner).client

    confirm = staff.get(reverse("admin:oauthclients_oauthclient_approve", args=[app.pk]))

    assert "Yes, approve" in confirm.content.decode()
    app.refresh_from_db()
    assert app.status == ClientStatus.PENDING
    done = staff.post(reverse("admin:oauthclients_oauthclient_approve", args=[app.pk]), digests_on_page(confirm))
    assert done.status_code == 302 and done["Location"] == change_url(app)
    app.refresh_from_db()
    assert app.status == ClientStatus.APPROVED
    assert not soup(staff.get(change_url(app))).select("a.review-approve")


def test_reject_needs_a_reason(staff, owner):
    app = make_client(owner).client
    url = reverse("admin:oauthclients_oauthclient_reject", args=[app.pk])

    refused = staff.post(url, {"reason": ""})

    assert refused.status_code == 200 and "Give the owner a reason" in refused.content.decode()
    app.refresh_from_db()
    assert app.status == ClientStatus.PENDING
    staff.post(url, {"reason": "The website does not exist."})
    app.refresh_from_db()
    assert app.status == ClientStatus.REJECTED and app.rejection_reason == "The website does not exist."


def test_a_user_without_change_permission_cannot_review(client, owner):
    app = make_client(owner).client
    viewer = make_user("viewer")
    viewer.is_staff = True  # staff, but no permission on clients
    viewer.save()
    client.force_login(viewer)
    response = client.post(reverse("admin:oauthclients_oauthclient_approve", args=[app.pk]))
    assert response.status_code == 403
    app.refresh_from_db()
    assert app.status == ClientStatus.PENDING


def test_the_page_shows_what_changed_since_the_last_approval(staff, owner):
    app = make_client(owner, approve=True).client
    services.client_update(
        client=app,
        actor=owner,
        name="Calendar Sync Pro",
        purpose=app.purpose,
        website_url=app.website_url,
        redirect_uris=[*app.redirect_uri_list, "https://calendar-sync.example.com/cb2"],
        scopes=app.scope_list,
        terms_url="https://calendar-sync.example.com/terms",
    )
    page = soup(staff.get(change_url(app)))

    changes = [p.get_text() for p in page.select(".field-changes_since_approval p")]
    assert changes == [
        "Name: Calendar Sync → Calendar Sync Pro",
        "Terms of service URL: (none) → https://calendar-sync.example.com/terms",
        "Added redirect URI https://calendar-sync.example.com/cb2",
    ]


def test_the_audit_trail_reads_as_sentences(staff, owner, reviewer):
    app = make_client(owner).client
    services.client_reject(client=app, actor=reviewer, reason="Vague purpose")
    page = soup(staff.get(change_url(app)))

    lines = [p.get_text(" ", strip=True) for p in page.select(".field-audit_trail p")]
    assert any("reviewer rejected the client: “Vague purpose”" in line for line in lines)
    assert any("owner registered the client (confidential) with scopes" in line for line in lines)
    assert not any("{" in line for line in lines)
    event = ClientAuditEvent.objects.filter(client=app, action="client.rejected").get()
    detail = soup(staff.get(reverse("admin:oauthclients_clientauditevent_change", args=[event.pk])))
    assert "reviewer rejected the client: “Vague purpose”" in detail.get_text()
    assert '"reason"' not in detail.get_text()


def test_the_changelist_opens_on_the_pending_queue_oldest_first(staff, owner):
    newest = make_client(owner, name="Newest").client
    oldest = make_client(owner, name="Oldest").client
    OAuthClient.objects.filter(pk=oldest.pk).update(created=timezone.now() - timedelta(days=3))
    make_client(owner, name="Done", approve=True)

    page = soup(staff.get(reverse("admin:oauthclients_oauthclient_changelist")))

    names = [a.get_text() for a in page.select("#result_list tbody th a")]
    assert names == ["Oldest", "Newest"]
    assert newest.pk


def test_the_admin_index_shows_the_pending_count(staff, owner):
    make_client(owner)
    make_client(owner, name="Second")
    page = soup(staff.get(reverse("admin:index")))
    assert "2 OAuth clients waiting for review" in page.select_one(".pending-queue").get_text(" ", strip=True)


def test_the_changelist_filters_by_kind(staff, owner):
    public = make_client(owner, name="Mobile", kind="public").client
    page = soup(staff.get(reverse("admin:oauthclients_oauthclient_changelist"), {"client_type__exact": "public"}))
    assert [a.get_text() for a in page.select("#result_list tbody th a")] == [public.name]


@pytest.mark.parametrize("action", [choice.value for choice in __import__("oauthclients.models").models.AuditAction])
def test_every_audit_action_has_a_sentence(owner, action):
    app = make_client(owner).client
    event = ClientAuditEvent.objects.create(
        client=app,
        actor=owner,
        user=owner,
        action=action,
        detail={"scopes": ["PROFILE_READ"], "changed": ["name"], "because": ["website_url"], "hint": "cs_abcd"},
    )
    sentence = event.sentence()
    # sentence() falls back to the action's label for an action it has no sentence for: that is
    # exactly what this test must catch.
    assert sentence != f"{event.get_action_display()}."
    assert sentence[0].isupper() or sentence.startswith("owner")
    assert "{" not in sentence and "[" not in sentence


def test_the_legacy_row_is_a_sentence_about_this_client(staff, owner):
    legacy = make_client(owner, is_legacy=True).client
    scoped = make_client(owner, name="Scoped").client
    assert (
        "registered before scopes existed"
        in soup(staff.get(change_url(legacy))).select_one(".field-legacy_display").get_text()
    )
    assert (
        soup(staff.get(change_url(scoped)))
        .select_one(".field-legacy_display")
        .get_text(" ", strip=True)
        .endswith("No: its tokens carry the scopes users granted.")
    )


def test_times_on_the_client_page_name_their_zone(staff, owner):
    app = make_client(owner).client
    text = soup(staff.get(change_url(app))).select_one(".field-audit_trail").get_text(" ", strip=True)
    zone = timezone.localtime(app.created).strftime("%Z")
    assert zone and f" {zone} ·" in text


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("authorization code replayed", "An authorization code was replayed"),
        ("rotated refresh token replayed", "A refresh token was replayed"),
    ],
)
def test_a_family_revocation_says_what_was_replayed(owner, reason, said):
    from oauthclients.models import AuditAction

    event = ClientAuditEvent.objects.create(
        client=make_client(owner).client, user=owner, action=AuditAction.FAMILY_REVOKED, detail={"reason": reason}
    )
    assert event.sentence().startswith(said)
