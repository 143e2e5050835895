import pytest
from django.test import Client

from tests.factories import make_client
from tests.oauthflows.helpers import assert_tokens, exchange, get_code


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
def app_redirect_uris():
    """The redirect URIs `app` registers; a module that needs others overrides this fixture."""
    return ["https://app.example.com/cb"]


@pytest.fixture
def app(owner, app_redirect_uris):
    """An approved confidential app (PROFILE_READ, BOOKING_READ) and its secret: the OpenID tests' app."""
    created = make_client(owner, scopes=["PROFILE_READ", "BOOKING_READ"], redirect_uris=app_redirect_uris, approve=True)
    return created.client, created.secret.plaintext


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
