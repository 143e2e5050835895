import os

import pytest
from django.db import connection
from django.test import Client

from signing.keys import signing_key_create
from tests.factories import PASSWORD, make_client, make_resource_server, make_user

REQUIRE_POSTGRES = os.environ.get("REQUIRE_POSTGRES") == "1"


def pytest_collection_modifyitems(config, items):
    """`postgres_only` tests skip on SQLite with a reason, or fail when REQUIRE_POSTGRES=1."""
    for item in items:
        if item.get_closest_marker("postgres_only"):
            item.fixturenames.append("_postgres_only_guard")


@pytest.fixture
def _postgres_only_guard(django_db_blocker):
    with django_db_blocker.unblock():
        vendor = connection.vendor
    if vendor == "postgresql":
        return
    if REQUIRE_POSTGRES:
        pytest.fail(f"REQUIRE_POSTGRES=1 but the test database is {vendor}, not PostgreSQL")
    pytest.skip("needs PostgreSQL (row locks and real concurrency); run with DATABASE_URL=postgres://...")


@pytest.fixture
def signing_keys(db):
    """One signing key of each algorithm the server signs with."""
    return {algorithm: signing_key_create(algorithm=algorithm) for algorithm in ("RS256", "ES256")}


@pytest.fixture
def owner(db):
    return make_user("owner")


@pytest.fixture
def other_developer(db):
    return make_user("otherdev")


@pytest.fixture
def reviewer(db):
    return make_user("reviewer", staff=True)


@pytest.fixture
def end_user(db):
    return make_user("enduser")


# Three kinds of browser, three names: `browser` (here: Django's test client, logged in as the end
# user), `user_session` (tests/integration: a requests.Session logged in to a live server) and
# `chromium` (tests/browser: a real headless Chromium).
@pytest.fixture
def browser(end_user):
    """The end user's browser (Django's test client), logged in."""
    browser = Client()
    assert browser.login(username=end_user.username, password=PASSWORD)
    return browser


@pytest.fixture
def staff(client, reviewer):
    """The reviewer's browser (pytest-django's `client`), logged in to the admin."""
    client.force_login(reviewer)
    return client


@pytest.fixture
def created(owner):
    """A pending confidential client with its first secret (services.ClientCreated)."""
    return make_client(owner)


@pytest.fixture
def client_obj(created):
    return created.client


@pytest.fixture
def resource_server(reviewer):
    """A resource server (it introspects tokens, nothing else) and its secret."""
    created = make_resource_server(reviewer)
    return created.client, created.secret.plaintext


@pytest.fixture
def approved_client(approved):
    """The approved client alone (the OAuthClient of `approved`)."""
    return approved.client


@pytest.fixture
def approved(owner):
    return make_client(owner, approve=True)


@pytest.fixture(autouse=True)
def _no_cached_cors_origins():
    """CORS answers are cached per origin in-process: no test sees another test's clients in them."""
    from oauthflows.cors import cors_origin_answers_forget

    cors_origin_answers_forget()
    yield
    cors_origin_answers_forget()


@pytest.fixture(autouse=True)
def _force_login_is_a_password_login(monkeypatch):
    """`Client.force_login` leaves the session as a password login through the login page leaves it:
    with allauth's record of how the user signed in, which the recent-sign-in rule reads
    (accounts.selectors.login_is_recent). The second-factor tests sign in through the pages."""
    from types import SimpleNamespace

    from allauth.account.internal.flows.login import record_authentication
    from django.test import Client

    original = Client._login

    def _login(self, user, backend=None):
        original(self, user, backend)
        session = self.session
        record_authentication(SimpleNamespace(session=session), user, "password")
        session.save()

    monkeypatch.setattr(Client, "_login", _login)
