"""Users see only what was approved (red-team finding 5; SECURITY.md, "Review").

The last approved name, website, policies and logo, until the next approval; logos only for
clients users can authorize; nothing from a login page's `next` for clients they cannot; names and
addresses built to look like someone else's refused, or flagged for the reviewer.
"""

import io
from urllib.parse import urlencode

import pytest
from bs4 import BeautifulSoup
from django.conf import settings
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from PIL import Image

from oauthclients import services
from oauthclients.models import ClientStatus, OAuthClient
from oauthclients.validators import lookalike_flags
from tests.factories import PASSWORD, make_client, make_resource_server, make_tokens
from tokens.consents import consent_record

pytestmark = pytest.mark.django_db


def png(color) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 64), color).save(out, format="PNG")
    return out.getvalue()


def edit(app, owner, **changes):
    arguments = {
        "name": app.name,
        "purpose": app.purpose,
        "website_url": app.website_url,
        "redirect_uris": app.redirect_uri_list,
        "scopes": app.scope_list,
        **changes,
    }
    return services.client_update(client=OAuthClient.objects.get(pk=app.pk), actor=owner, **arguments)


@pytest.fixture
def approved_with_logo(owner, reviewer):
    created = services.client_create(
        owner=owner,
        name="Good App",
        purpose="Shows your bookings.",
        website_url="https://good.example",
        kind="confidential",
        redirect_uris=["https://good.example/cb"],
        scopes=["PROFILE_READ"],
        logo=png((0, 128, 0)),
    )
    return services.client_approve(client=created.client, actor=reviewer)


def logo_status(client_id: str) -> int:
    return Client().get(f"/logos/{client_id}.png").status_code


# --- logos ---


def test_an_approved_clients_logo_is_served(approved_with_logo):
    response = Client().get(approved_with_logo.shown.logo_url)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert "public" in response["Cache-Control"]


def test_logos_of_pending_rejected_and_deleted_clients_are_404(owner, reviewer, approved_with_logo):
    pending = services.client_create(
        owner=owner,
        name="Pending",
        purpose="Shows your bookings.",
        website_url="https://p.example",
        kind="public",
        redirect_uris=["https://p.example/cb"],
        scopes=["PROFILE_READ"],
        logo=png((1, 1, 1)),
    ).client
    assert logo_status(pending.client_id) == 404
    services.client_reject(client=approved_with_logo, actor=reviewer, reason="Phishing.")
    assert logo_status(approved_with_logo.client_id) == 404
    other = services.client_approve(client=pending, actor=reviewer)
    assert logo_status(other.client_id) == 200
    services.client_delete(client=other, actor=owner)
    assert logo_status(other.client_id) == 404


def test_a_resource_server_or_a_client_id_nobody_has_is_404(owner):
    assert logo_status(make_resource_server(owner).client.client_id) == 404
    assert logo_status("no-such-client") == 404


def test_a_new_logo_awaiting_review_is_not_served_to_users(approved_with_logo, owner):
    before = Client().get(approved_with_logo.shown.logo_url).content
    edited = edit(approved_with_logo, owner, logo=png((255, 0, 0)))
    assert edited.status == ClientStatus.PENDING
    # Users get no logo at all while the client cannot be authorized, and never the new one.
    assert logo_status(edited.client_id) == 404
    owner_browser = Client()
    assert owner_browser.login(username=owner.username, password=PASSWORD)
    mine = owner_browser.get(edited.current_logo_url)
    assert mine.status_code == 200 and mine.content != before and "no-cache" in mine["Cache-Control"]
    assert Client().get(edited.current_logo_url).status_code == 302  # the owner's page: log in first


def test_another_developer_cannot_read_a_logo_awaiting_review(approved_with_logo, owner, other_developer):
    edited = edit(approved_with_logo, owner, logo=png((255, 0, 0)))
    browser = Client()
    assert browser.login(username=other_developer.username, password=PASSWORD)
    assert browser.get(edited.current_logo_url).status_code == 404


def test_after_the_next_approval_users_get_the_new_logo_at_a_new_url(approved_with_logo, owner, reviewer):
    old_url = approved_with_logo.shown.logo_url
    edited = edit(approved_with_logo, owner, logo=png((255, 0, 0)))
    again = services.client_approve(client=edited, actor=reviewer)
    assert again.shown.logo_url != old_url
    assert Client().get(again.shown.logo_url).content == bytes(again.logo_png)


# --- Connected apps: the approved presentation while an edit awaits review ---


def test_connected_apps_shows_the_approved_name_website_and_logo_while_an_edit_awaits_review(
    approved_with_logo, owner, end_user
):
    consent_record(user=end_user, client=approved_with_logo, scopes=["PROFILE_READ"])
    make_tokens(end_user, approved_with_logo)
    edit(approved_with_logo, owner, name="Evil App", website_url="https://evil.example", logo=png((255, 0, 0)))

    browser = Client()
    assert browser.login(username=end_user.username, password=PASSWORD)
    page = browser.get(reverse("oauth:connected_apps")).content.decode()

    assert "Good App" in page and "https://good.example" in page
    assert "Evil App" not in page and "evil.example" not in page
    assert f"/logos/{approved_with_logo.client_id}.png" not in page  # it cannot be authorized now: no logo


# --- the login page's `next` ---


def login_page(client_id: str) -> str:
    query = urlencode({"client_id": client_id, "response_type": "code", "redirect_uri": "https://x.example/cb"})
    next_url = f"{settings.OAUTH_AUTHORIZE_PATH}?{query}"
    response = Client().get(reverse("login") + "?" + urlencode({"next": next_url}))
    assert response.status_code == 200
    return BeautifulSoup(response.content, "html.parser").select_one("main, body").get_text(" ", strip=True)


def test_the_login_page_names_an_approved_client_by_its_approved_name(approved_with_logo, owner):
    assert "Log in to continue to Good App" in login_page(approved_with_logo.client_id)


def test_the_login_page_names_no_client_that_cannot_be_authorized(owner, reviewer, approved_with_logo):
    pending = make_client(owner, name="Totally Legit Bank").client
    assert "Totally Legit Bank" not in login_page(pending.client_id)
    resource_server = make_resource_server(owner, name="Internal Bookings API").client
    assert "Internal Bookings API" not in login_page(resource_server.client_id)
    edited = edit(approved_with_logo, owner, name="Evil App")  # back to review
    text = login_page(edited.client_id)
    assert "Evil App" not in text and "Good App" not in text


# --- look-alikes: refused where no honest client needs them, flagged where some might ---


@pytest.mark.parametrize("name", ["Good \u202eppA", "\u2067Bank\u2069 Login", "Pay\u200fPal"])
def test_a_name_with_bidirectional_controls_is_refused(owner, name):
    with pytest.raises(ValidationError, match="bidirectional"):
        make_client(owner, name=name)


@pytest.mark.parametrize(
    "url",
    ["https://раураl.com", "https://good.example/\u202e", "https://pаypal.com/login"],
    ids=["cyrillic-with-latin-l", "bidi-in-path", "latin-with-cyrillic-a"],
)
def test_a_website_on_a_mixed_script_look_alike_host_is_refused(owner, url):
    with pytest.raises(ValidationError) as caught:
        make_client(owner, website_url=url)
    assert "look-alike" in " ".join(caught.value.message_dict["website_url"])


def test_a_policy_link_on_a_look_alike_host_is_refused(owner, approved_with_logo):
    with pytest.raises(ValidationError, match="look-alike"):
        edit(approved_with_logo, owner, privacy_policy_url="https://раураl.com/privacy")


def test_an_honest_internationalised_website_is_accepted_and_flagged_for_the_reviewer(owner):
    app = make_client(owner, name="Café Bücher", website_url="https://bücher.example").client
    flags = [flag.text for flag in lookalike_flags(name=app.name, urls={"website": app.website_url})]
    assert flags == ["The website host bücher.example is internationalised: xn--bcher-kva.example."]


def test_a_mixed_script_name_is_flagged_for_the_reviewer(owner, reviewer, client):
    app = make_client(owner, name="PаyPal Checkout").client  # the second letter is Cyrillic
    client.force_login(reviewer)
    page = client.get(reverse("admin:oauthclients_oauthclient_approve", args=[app.pk])).content.decode()
    assert "The name mixes alphabets in PаyPal" in page
    assert lookalike_flags(name="Calendar Sync", urls={"website": "https://calendar.example"}) == []


def test_the_consent_page_shows_the_approved_purpose_after_an_edit_that_kept_it_approved(
    approved_with_logo, owner, end_user
):
    from tests.oauthflows.helpers import authorize_url

    browser = Client()
    browser.force_login(end_user)
    edited = edit(approved_with_logo, owner, purpose="Now also reads your messages.")
    assert edited.status == ClientStatus.APPROVED  # the purpose alone does not send it back to review
    response = browser.get(authorize_url(edited, redirect_uri="https://good.example/cb"))
    assert response.status_code == 200 and "Good App" in response.content.decode()
    assert "Now also reads your messages." not in response.content.decode()
    assert "Shows your bookings." in response.content.decode()  # the approved purpose
    assert edited.changes_since_approval() == ["Purpose: Shows your bookings. → Now also reads your messages."]


def test_what_changed_since_the_approval_is_in_the_administrators_language(approved_with_logo, owner):
    from django.utils import translation

    edited = edit(approved_with_logo, owner, purpose="Now also reads your messages.")
    with translation.override("de"):
        assert edited.changes_since_approval() == ["Zweck: Shows your bookings. → Now also reads your messages."]
    with translation.override("ar"):
        assert edited.changes_since_approval() == ["الغرض: Shows your bookings. ← Now also reads your messages."]
