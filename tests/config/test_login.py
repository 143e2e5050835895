"""Login: no open redirect through next= (SECURITY.md)."""

import pytest
from django.test import Client

from tests.factories import PASSWORD


@pytest.mark.parametrize(
    "target",
    ["https://evil.example.com/", "//evil.example.com/x", "http:\\\\evil.example.com", "https:evil.example.com"],
)
def test_an_off_site_next_is_ignored(end_user, target):
    response = Client().post("/accounts/login/", {"username": end_user.username, "password": PASSWORD, "next": target})
    assert response.status_code == 302
    # An end user without clients lands on Connected apps (accounts.selectors.landing_url_for, through config.home).
    assert response["Location"] == "/settings/apps/"


def test_an_on_site_next_is_followed(end_user):
    target = "/auth/oauth2/authorize?client_id=x&redirect_uri=y"
    response = Client().post("/accounts/login/", {"username": end_user.username, "password": PASSWORD, "next": target})
    assert response.status_code == 302 and response["Location"] == target
