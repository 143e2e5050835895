"""Post-logout redirect URIs (OpenID Connect RP-Initiated Logout §3.1, RFC 7591 metadata): the
same rules as redirect URIs, reviewed like them, and set from every place a client is made."""

import json
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from oauthclients import services
from oauthclients.exceptions import ReviewOutdated
from oauthclients.models import ClientStatus, OAuthClient
from tests.oauthclients.pages import edit_data, registration_data, url

AFTER = "https://app.example.com/bye"


def _create(owner, *, after=(AFTER,), approve=False):
    return services.client_create(
        owner=owner,
        name="Calendar Sync",
        purpose="Syncs bookings.",
        website_url="https://app.example.com",
        kind="confidential",
        redirect_uris=["https://app.example.com/cb"],
        post_logout_redirect_uris=list(after),
        scopes=["PROFILE_READ"],
        approve=approve,
        actor=owner,
    ).client


def test_they_are_stored_and_part_of_what_an_approval_covers(owner, reviewer):
    client = _create(owner)
    assert client.post_logout_redirect_uri_list == [AFTER]
    digest = client.review_digest()
    approved = services.client_approve(client=client, actor=reviewer, expected_digest=digest)
    assert approved.approved_snapshot["post_logout_redirect_uris"] == [AFTER]
    assert AFTER in approved.post_logout_redirect_uri_choices


def test_a_change_after_the_review_screen_is_not_approved(owner, reviewer):
    client = _create(owner)
    digest = client.review_digest()
    services.client_update(
        client=client,
        actor=owner,
        name=client.name,
        purpose=client.purpose,
        website_url=client.website_url,
        redirect_uris=client.redirect_uri_list,
        scopes=client.scope_list,
        post_logout_redirect_uris=[AFTER, "https://evil.example/"],
    )
    with pytest.raises(ReviewOutdated):
        services.client_approve(client=client, actor=reviewer, expected_digest=digest)


def _edit(client, owner, after):
    return services.client_update(
        client=client,
        actor=owner,
        name=client.name,
        purpose=client.purpose,
        website_url=client.website_url,
        redirect_uris=client.redirect_uri_list,
        scopes=client.scope_list,
        post_logout_redirect_uris=after,
    )


def test_adding_one_sends_an_approved_client_back_to_review(owner):
    client = _create(owner, approve=True)
    edited = _edit(client, owner, [AFTER, "https://app.example.com/other"])
    assert edited.status == ClientStatus.PENDING
    assert "Added post-logout redirect URI https://app.example.com/other" in edited.changes_since_approval()


def test_removing_one_keeps_the_approval(owner):
    client = _create(owner, approve=True)
    assert _edit(client, owner, []).status == ClientStatus.APPROVED


def test_an_edit_that_leaves_them_out_keeps_them(owner):
    client = _create(owner, approve=True)
    edited = _edit(client, owner, None)
    assert edited.post_logout_redirect_uri_list == [AFTER] and edited.status == ClientStatus.APPROVED


def test_one_written_behind_the_reviews_back_is_not_accepted(owner):
    client = _create(owner, approve=True)
    OAuthClient.objects.filter(pk=client.pk).update(post_logout_redirect_uris=f"{AFTER} https://evil.example/")
    client.refresh_from_db()
    assert client.post_logout_redirect_uri_choices == ["https://app.example.com/cb", AFTER]


@pytest.mark.parametrize(
    "after",
    [["http://app.example.com/bye"], ["https://app.example.com/#x"], [f"https://a.example/{i}" for i in range(11)]],
)
def test_they_follow_the_redirect_uri_rules(owner, after):
    with pytest.raises(ValidationError) as caught:
        _create(owner, after=after)
    assert "post_logout_redirect_uris" in caught.value.message_dict


def test_the_developer_form_sets_and_shows_them(client, owner):
    client.force_login(owner)
    response = client.post(url("client_create"), registration_data(post_logout_redirect_uris=f"{AFTER}\r\n"))
    assert response.status_code == 303, response.content[:300]
    created = OAuthClient.objects.get(user=owner)
    assert created.post_logout_redirect_uri_list == [AFTER]
    assert AFTER in client.get(url("client_detail", created)).content.decode()
    assert AFTER in client.get(url("client_update", created)).content.decode()  # prefilled
    client.post(url("client_update", created), edit_data(created, post_logout_redirect_uris=""))
    created.refresh_from_db()
    assert created.post_logout_redirect_uri_list == []


def test_the_developer_form_reports_a_bad_one_on_its_field(client, owner):
    client.force_login(owner)
    response = client.post(url("client_create"), registration_data(post_logout_redirect_uris="http://evil.example/"))
    assert response.status_code == 200
    assert response.context["form"].errors["post_logout_redirect_uris"]
    assert not OAuthClient.objects.filter(user=owner).exists()


def test_the_admin_add_form_sets_them(client, reviewer, owner):
    client.force_login(reviewer)
    data = {
        "owner": owner.pk,
        "name": "Admin Made",
        "client_type": "confidential",
        "redirect_uris": "https://admin-made.example.com/cb",
        "post_logout_redirect_uris": "https://admin-made.example.com/bye",
        "scopes": ["PROFILE_READ"],
        "website_url": "https://admin-made.example.com",
        "purpose": "Shows your bookings.",
    }
    client.post(reverse("admin:oauthclients_oauthclient_add"), data)
    made = OAuthClient.objects.get(name="Admin Made")
    assert made.post_logout_redirect_uri_list == ["https://admin-made.example.com/bye"]
    page = client.get(reverse("admin:oauthclients_oauthclient_change", args=[made.pk])).content.decode()
    assert "https://admin-made.example.com/bye" in page


def test_the_command_sets_and_shows_them(owner):
    out = StringIO()
    call_command(
        "oauthclient",
        *("create", "--owner", "owner", "--name", "Shell App", "--purpose", "Syncs."),
        *("--redirect-uri", "https://shell.example.com/cb", "--scope", "PROFILE_READ"),
        *("--post-logout-redirect-uri", "https://shell.example.com/bye"),
        stdout=out,
    )
    client_id = json.loads(out.getvalue())["client_id"]
    shown = StringIO()
    call_command("oauthclient", "show", client_id, stdout=shown)
    assert json.loads(shown.getvalue())["post_logout_redirect_uris"] == ["https://shell.example.com/bye"]
