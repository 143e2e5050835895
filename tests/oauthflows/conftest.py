import pytest
from django.test import Client

from tests.factories import PASSWORD, make_client
from tests.oauthflows.helpers import assert_tokens, exchange, get_code


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


@pytest.fixture
def token_scope():
    """The scope `tokens` asks for; a module that needs others overrides this fixture."""
    return "PROFILE_READ"


@pytest.fixture
def tokens(browser, api, confidential, token_scope):
    """A token pair of `confidential` for the end user, from a real consent and code exchange."""
    client, secret = confidential
    return assert_tokens(
        exchange(api, client, get_code(browser, client, scope=token_scope), secret=secret), token_scope
    )
