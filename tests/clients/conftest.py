"""The live server as an issuer, the end user's browser for the live-server tests of this package,
and the Node package of tests/clients/node installed for them."""

from pathlib import Path

import pytest
import requests

from tests.clients.test_client_libraries import CSRF_RE, TIMEOUT
from tests.factories import PASSWORD
from tests.node_packages import npm_installed

NODE_PACKAGE = Path(__file__).parent / "node"


@pytest.fixture
def server(live_server, settings):
    """The live server's URL, and its issuer everywhere: the metadata, every token's `iss` (ID
    tokens, JWT access tokens) and RFC 9207 `iss` on the redirect, which strict clients check."""
    from signing.statuslist import allocator

    settings.OAUTH_ISSUER = live_server.url
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live_server.url}
    allocator.forget()  # a status-list block of an earlier test's database is gone with it
    return live_server.url


PACKAGE_FILES = ("package.json", "package-lock.json", "flow.mjs", "jwt_access_token.mjs", "mcp_agent.mjs")


@pytest.fixture
def user_agent(server, end_user):
    """The end user's browser: a requests.Session logged in through the login form."""
    session = requests.Session()
    page = session.get(server + "/accounts/login/", timeout=TIMEOUT)
    assert page.status_code == 200
    response = session.post(
        server + "/accounts/login/",
        data={"username": end_user.username, "password": PASSWORD, "csrfmiddlewaretoken": CSRF_RE.search(page.text)[1]},
        headers={"Referer": server + "/accounts/login/"},
        allow_redirects=False,
        timeout=TIMEOUT,
    )
    assert response.status_code == 302, response.text[:500]
    with session:
        yield session


@pytest.fixture(scope="session")
def node_package() -> Path:
    """tests/clients/node installed by `npm ci` (its lock, exactly) in a cache directory."""
    return npm_installed(
        NODE_PACKAGE, PACKAGE_FILES, prefix="", main="openid-client", needed_for="the Node client library tests"
    )
