"""An approval applies only to the version of the client the reviewer saw (SECURITY.md, "Review").

The red team's scenario: an administrator opens the approve confirmation of a pending "Good App";
meanwhile its owner edits it to an evil redirect URI and wider scopes; the administrator confirms.
Nothing may be approved then: not from the change page, the bulk action or the CLI.
"""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from oauthclients import services
from oauthclients.exceptions import ReviewOutdated
from oauthclients.models import AuditAction, ClientStatus, OAuthClient
from tests.factories import make_client
from tests.oauthclients.test_command_oauthclient import refused, run
from tests.security.credentials import digests_on_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def good_app(owner):
    return make_client(
        owner, name="Good App", redirect_uris=["https://good.example/cb"], scopes=["PROFILE_READ"]
    ).client


def evil_edit(app, owner):
    """What the owner does while the reviewer reads the confirmation page."""
    return services.client_update(
        client=OAuthClient.objects.get(pk=app.pk),
        actor=owner,
        name=app.name,
        purpose=app.purpose,
        website_url=app.website_url,
        redirect_uris=["https://evil.example/steal"],
        scopes=["PROFILE_WRITE", "BOOKING_WRITE", "ORG_BOOKING_WRITE"],
    )


def status_of(app):
    return OAuthClient.objects.get(pk=app.pk).status


def approvals_of(app):
    return app.audit_events.filter(action=AuditAction.CLIENT_APPROVED).count()


# --- the service ---


def test_the_digest_changes_with_everything_approval_covers(good_app, owner):
    before = good_app.review_digest()
    assert OAuthClient.objects.get(pk=good_app.pk).review_digest() == before  # stable across reads
    for field, value in (
        ("name", "Good App 2"),
        ("website_url", "https://other.example"),
        ("privacy_policy_url", "https://good.example/privacy"),
        ("terms_url", "https://good.example/terms"),
        ("redirect_uris", "https://good.example/cb https://good.example/cb2"),
        ("scopes", "PROFILE_READ BOOKING_READ"),
        ("client_type", "public"),
        ("purpose", "Something else."),
    ):
        changed = OAuthClient.objects.get(pk=good_app.pk)
        setattr(changed, field, value)
        assert changed.review_digest() != before, field


def test_approving_with_the_digest_of_the_version_seen_approves(good_app, reviewer):
    approved = services.client_approve(client=good_app, actor=reviewer, expected_digest=good_app.review_digest())
    assert approved.status == status_of(good_app) == ClientStatus.APPROVED


def test_approving_after_the_owner_changed_the_client_approves_nothing(good_app, owner, reviewer):
    seen = good_app.review_digest()
    evil_edit(good_app, owner)

    with pytest.raises(ReviewOutdated, match="changed after you reviewed it"):
        services.client_approve(client=good_app, actor=reviewer, expected_digest=seen)

    assert status_of(good_app) == ClientStatus.PENDING
    assert approvals_of(good_app) == 0
    assert OAuthClient.objects.get(pk=good_app.pk).approved_snapshot == {}


@pytest.mark.parametrize("given", ["", "0" * 64, "é" * 64, "NoneType"])
def test_a_digest_that_is_not_the_clients_approves_nothing(good_app, reviewer, given):
    with pytest.raises(ReviewOutdated):
        services.client_approve(client=good_app, actor=reviewer, expected_digest=given)
    assert status_of(good_app) == ClientStatus.PENDING


# --- the admin's change page ---


def approve_url(app):
    return reverse("admin:oauthclients_oauthclient_approve", args=[app.pk])


def test_the_confirmation_shows_everything_approval_covers(staff, owner):
    app = make_client(
        owner, name="Good App", redirect_uris=["https://good.example/cb", "https://good.example/cb2"]
    ).client
    services.client_update(
        client=app,
        actor=owner,
        name=app.name,
        purpose="Reads your profile.",
        website_url="https://good.example",
        redirect_uris=app.redirect_uri_list,
        scopes=app.scope_list,
        privacy_policy_url="https://good.example/privacy",
        terms_url="https://good.example/terms",
    )
    page = staff.get(approve_url(app)).content.decode()
    for shown in (
        "Good App",
        "https://good.example/cb",
        "https://good.example/cb2",
        "https://good.example/privacy",
        "https://good.example/terms",
        "https://good.example",
        "Reads your profile.",
        "Confidential",
        "PROFILE_READ",
        "BOOKING_READ",
    ):
        assert shown in page, shown
    assert digests_on_page(staff.get(approve_url(app))) == {
        f"digest_{app.pk}": OAuthClient.objects.get(pk=app.pk).review_digest()
    }


def test_confirming_after_the_owner_changed_it_approves_nothing_and_says_why(staff, good_app, owner):
    confirmation = staff.get(approve_url(good_app))
    evil_edit(good_app, owner)

    response = staff.post(approve_url(good_app), digests_on_page(confirmation), follow=True)

    assert status_of(good_app) == ClientStatus.PENDING
    assert "changed after you reviewed it" in response.content.decode()
    assert approvals_of(good_app) == 0


def test_a_post_without_the_confirmations_digest_approves_nothing(staff, good_app):
    staff.post(approve_url(good_app))
    assert status_of(good_app) == ClientStatus.PENDING


def test_a_client_id_that_is_not_a_number_is_a_404_not_a_500(staff):
    assert staff.get(reverse("admin:oauthclients_oauthclient_approve", args=["abc"])).status_code == 404
    assert staff.get(reverse("admin:oauthclients_oauthclient_reject", args=["abc"])).status_code == 404


# --- the admin's bulk action ---


def bulk(http, clients, **extra):
    data = {"action": "approve_clients", ACTION_CHECKBOX_NAME: [c.pk for c in clients], "index": 0, **extra}
    return http.post(reverse("admin:oauthclients_oauthclient_changelist") + "?status__exact=all", data)


def test_bulk_approve_asks_for_confirmation_showing_each_client_first(staff, good_app, owner):
    other = make_client(owner, name="Other App", redirect_uris=["https://other.example/cb"]).client

    confirmation = bulk(staff, [good_app, other])

    assert confirmation.status_code == 200
    page = confirmation.content.decode()
    assert "https://good.example/cb" in page and "https://other.example/cb" in page
    assert set(digests_on_page(confirmation)) == {f"digest_{good_app.pk}", f"digest_{other.pk}"}
    assert status_of(good_app) == status_of(other) == ClientStatus.PENDING


def test_bulk_approve_skips_a_client_changed_since_the_confirmation(staff, good_app, owner):
    other = make_client(owner, name="Other App").client
    confirmation = bulk(staff, [good_app, other])
    evil_edit(good_app, owner)

    response = bulk(staff, [good_app, other], post="yes", **digests_on_page(confirmation))

    assert response.status_code == 302
    assert status_of(good_app) == ClientStatus.PENDING
    assert status_of(other) == ClientStatus.APPROVED


# --- the CLI: show prints the digest, approve --expect-digest checks it ---


def test_cli_show_prints_the_digest_and_approve_accepts_it(good_app, reviewer):
    shown = run("show", good_app.client_id)
    assert shown["review_digest"] == good_app.review_digest()
    result = run("--actor", "reviewer", "approve", good_app.client_id, "--expect-digest", shown["review_digest"])
    assert result["status"] == ClientStatus.APPROVED


def test_cli_approve_refuses_a_client_changed_since_show(good_app, owner, reviewer):
    shown = run("show", good_app.client_id)
    evil_edit(good_app, owner)
    message = refused("--actor", "reviewer", "approve", good_app.client_id, "--expect-digest", shown["review_digest"])
    assert "changed after you reviewed it" in message
    assert status_of(good_app) == ClientStatus.PENDING
