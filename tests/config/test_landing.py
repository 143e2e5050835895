"""Where a login lands, and how the login page names the app that sent the user."""

from urllib.parse import urlencode

import pytest
from django.test import Client

from oauthclients import services
from tests.factories import PASSWORD, make_client, make_user

pytestmark = pytest.mark.django_db


def log_in(user, **extra):
    return Client().post("/accounts/login/", {"username": user.username, "password": PASSWORD, **extra})


def test_an_end_user_without_next_lands_on_connected_apps(end_user):
    assert log_in(end_user)["Location"] == "/settings/apps/"


def test_anyone_who_owns_a_client_lands_on_the_developer_page(owner):
    make_client(owner)
    assert log_in(owner)["Location"] == "/settings/developer/"


def test_a_deleted_client_does_not_make_a_developer(owner):
    services.client_delete(client=make_client(owner).client, actor=owner)
    assert log_in(owner)["Location"] == "/settings/apps/"


def test_next_still_wins(owner):
    make_client(owner)
    assert log_in(owner, next="/settings/apps/")["Location"] == "/settings/apps/"


def test_the_home_page_makes_the_same_choice(owner, end_user):
    make_client(owner)
    for user, landing in ((owner, "/settings/developer/"), (end_user, "/settings/apps/")):
        browser = Client()
        browser.force_login(user)
        assert browser.get("/")["Location"] == landing
    assert Client().get("/")["Location"].startswith("/accounts/login/")


def login_page(next_url: str) -> str:
    response = Client().get("/accounts/login/?" + urlencode({"next": next_url}))
    assert response.status_code == 200
    return response.content.decode()


def test_the_login_page_names_the_app_of_an_authorization_request(owner):
    client = make_client(owner, name="Team Planner", approve=True).client
    page = login_page(f"/auth/oauth2/authorize?client_id={client.client_id}&response_type=code")
    assert "Log in to continue to <bdi>Team Planner</bdi>" in page


@pytest.mark.parametrize(
    "next_url",
    [
        "/settings/apps/",
        "https://evil.example.com/auth/oauth2/authorize?client_id={id}",
        "/auth/oauth2/authorize?client_id=unknown",
        "/auth/oauth2/authorize?client_id={id}&client_id={id}",
    ],
)
def test_the_login_page_names_no_app_otherwise(owner, next_url):
    client = make_client(owner, name="Team Planner", approve=True).client
    page = login_page(next_url.format(id=client.client_id))
    assert "Team Planner" not in page and "<h1>Log in</h1>" in page


def test_a_rejected_app_is_not_named(owner, reviewer):
    client = make_client(owner, name="Team Planner").client
    services.client_reject(client=client, actor=reviewer, reason="No.")
    assert "Team Planner" not in login_page(f"/auth/oauth2/authorize?client_id={client.client_id}")


def test_flash_messages_are_one_live_region_of_paragraphs(owner):
    make_client(owner)
    other = make_user("flashy")
    browser = Client()
    browser.force_login(other)
    content = browser.get("/settings/apps/").content.decode()
    # Always present (empty), so that screen readers announce what appears in it; never a list.
    assert '<div class="messages" role="status">' in content
    assert 'ul class="messages"' not in content
