import pytest
from django.db import connection

from tests.factories import make_client
from tests.integration.flows import login, make_server_user
from tests.integration.server import database_url, print_log, running_server

REPORTS = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # Lets a fixture know, at teardown, whether its test failed (to print the server log then).
    report = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report


@pytest.fixture
def server_env() -> dict[str, str]:
    """Extra environment for the `server` fixture; a test module overrides this fixture to set some."""
    return {}


@pytest.fixture
def server(request, _postgres_only_guard, transactional_db, server_env):
    """gunicorn (4 sync workers, production settings, debug off) on the test's own database.

    The test database is shared with the server, so the test must commit what the server is to see:
    hence `transactional_db`. PostgreSQL only (the guard skips, or fails under REQUIRE_POSTGRES=1).
    """
    with running_server(database_url(connection.settings_dict), env=server_env) as live:
        yield live
        report = request.node.stash.get(REPORTS, {}).get("call")
        if report is None or report.failed:
            print_log(live)


@pytest.fixture
def app_owner(transactional_db):
    return make_server_user("appowner")


@pytest.fixture
def app_scopes():
    """The scopes `server_app` registers; a module that needs others overrides this fixture."""
    return ["PROFILE_READ"]


@pytest.fixture
def server_app(app_owner, app_scopes):
    """An approved confidential client and its secret."""
    created = make_client(app_owner, redirect_uris=["http://localhost:8765/cb"], scopes=app_scopes, approve=True)
    return created.client, created.secret.plaintext


@pytest.fixture
def user_session(server, transactional_db):
    """The end user's browser, logged in to the live server."""
    return login(server.url, make_server_user("racer").username)
