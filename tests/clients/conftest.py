"""The end user's browser for the live-server tests of this package: each module names its own `server`."""

import pytest
import requests

from tests.clients.test_client_libraries import CSRF_RE, TIMEOUT
from tests.factories import PASSWORD


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
