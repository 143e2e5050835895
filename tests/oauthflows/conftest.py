import pytest
from django.test import Client

from tests.factories import PASSWORD, make_client


@pytest.fixture
def browser(end_user):
    """The end user's browser, logged in."""
    browser = Client()
    assert browser.login(username=end_user.username, password=PASSWORD)
    return browser


@pytest.fixture
def api():
    """The third-party app's HTTP client (no session, no CSRF token)."""
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def confidential(owner):
    created = make_client(
        owner,
        scopes=["PROFILE_READ", "PROFILE_WRITE", "BOOKING_READ", "ORG_PROFILE_READ"],
        redirect_uris=["https://app.example.com/callback", "http://localhost:8765/cb"],
        approve=True,
    )
    return created.client, created.secret.plaintext


@pytest.fixture
def public(owner):
    return make_client(
        owner, name="Mobile", kind="public", redirect_uris=["http://127.0.0.1:9000/cb"], approve=True
    ).client


@pytest.fixture
def legacy(owner):
    created = make_client(owner, name="Old App", is_legacy=True, approve=True)
    return created.client, created.secret.plaintext
