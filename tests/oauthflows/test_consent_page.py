"""What the consent screen tells a careful user before they click Allow."""

import io
from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup
from django.test import Client
from PIL import Image

from oauthclients import services
from profiles.models import Profile
from tests.factories import PASSWORD, make_client
from tests.oauthflows.helpers import authorize_url

pytestmark = pytest.mark.django_db


def page_of(browser, url):
    response = browser.get(url)
    assert response.status_code == 200
    return BeautifulSoup(response.content, "html.parser")


def test_it_says_who_is_signed_in_and_offers_to_switch_account(browser, end_user, confidential):
    client, _secret = confidential
    Profile.objects.create(user=end_user, name="Erin User")
    url = authorize_url(client)
    page = page_of(browser, url)
    assert "Signed in as Erin User (enduser)" in " ".join(page.select_one(".signed-in p").get_text().split())
    form = page.select_one(".signed-in form")
    assert form["action"] == "/accounts/logout/" and form["method"] == "post"
    next_url = form.select_one("input[name=next]")["value"]
    assert urlsplit(next_url).path == "/accounts/login/"
    assert parse_qs(urlsplit(next_url).query)["next"] == [url]


def test_switch_account_logs_out_and_comes_back_to_the_same_request(browser, confidential):
    client, _secret = confidential
    url = authorize_url(client)
    next_url = page_of(browser, url).select_one(".signed-in input[name=next]")["value"]
    response = browser.post("/accounts/logout/", {"next": next_url})
    assert response.status_code == 302 and response["Location"] == next_url
    login = browser.get(next_url)
    assert login.status_code == 200 and "_auth_user_id" not in browser.session
    assert f'value="{url}"' in login.content.decode().replace("&amp;", "&")


def test_it_shows_identity_policies_and_the_reviewed_badge(browser, owner):
    client = services.client_create(
        owner=owner,
        name="Planner",
        website_url="https://planner.example.com",
        purpose="Plans your week.",
        privacy_policy_url="https://planner.example.com/privacy",
        terms_url="https://planner.example.com/terms",
        kind="confidential",
        redirect_uris=["https://planner.example.com/cb"],
        scopes=["PROFILE_READ"],
        logo=_png(),
        approve=True,
    ).client
    page = page_of(browser, authorize_url(client, redirect_uri="https://planner.example.com/cb"))
    logo = page.select_one("img.app-logo")
    assert logo["src"] == client.shown.logo_url and logo["src"].startswith("/logos/")
    links = {a.get_text(): a["href"] for a in page.select(".app-facts a")}
    assert links["Privacy policy"] == "https://planner.example.com/privacy"
    assert links["Terms of service"] == "https://planner.example.com/terms"
    assert "Plans your week." in page.select_one(".app-facts").get_text()
    assert page.select_one(".badge.approved").get_text() == "Reviewed"
    assert page.select_one(".notice") is None


def test_the_owner_testing_a_pending_client_sees_information_not_an_error(owner):
    client = make_client(owner).client
    browser = Client()
    browser.force_login(owner)
    page = page_of(browser, authorize_url(client))
    notice = page.select_one(".notice")
    assert notice["class"] == ["notice", "info"] and notice["role"] == "note"
    assert "Not yet reviewed — only you can use it." in notice.get_text()
    assert not page.select(".message.error, .alert.error, [role=alert]")


def test_scopes_are_grouped_by_resource_with_risk_first(browser, owner):
    scopes = ["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE", "ORG_BOOKING_READ", "SCHEDULE_READ"]
    client = make_client(owner, scopes=scopes, approve=True).client
    page = page_of(browser, authorize_url(client, scope=" ".join(scopes)))
    resources = page.select("ul.resources > li")
    names = [li.select_one(".resource-name").get_text() for li in resources]
    assert names == ["Bookings", "Schedules", "Profile"]
    bookings = resources[0]
    assert "higher-risk" in bookings["class"]
    tags = [tag.get_text(" ", strip=True) for tag in bookings.select(".tag")]
    assert tags == [
        "Personal: read and change",
        "Organization: read, includes team",
        "Can change",
        "Organization-wide",
    ]
    assert "TEAM_BOOKING_READ" in bookings.select_one(".scope-details").get_text()
    assert "higher-risk" not in resources[2]["class"]
    # Descriptions sit in a <details> per resource: on a phone the list is one line per resource.
    assert len(page.select("ul.resources details")) == 3


def test_a_legacy_full_access_request_is_a_prominent_warning(browser, legacy):
    client, _secret = legacy
    page = page_of(browser, authorize_url(client, scope=None))
    warning = page.select_one(".notice.danger")
    assert "asks for full access to your account" in warning.get_text()
    assert page.select_one("ul.resources") is None


def test_it_says_access_can_be_revoked_later_below_the_buttons(browser, confidential):
    client, _secret = confidential
    page = page_of(browser, authorize_url(client))
    note = page.select_one(".revoke-later")
    assert "You can revoke access at any time in Connected apps" in note.get_text(" ", strip=True)
    assert note.select_one("a")["href"] == "/settings/apps/"
    assert page.select_one("form .actions").find_next("p") is note


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 64), (10, 120, 200)).save(out, format="PNG")
    return out.getvalue()


assert PASSWORD  # the cast logs in with it (tests/oauthflows/conftest.py)
