"""Database unreachable: 503 with Retry-After, the /v2 shape or a page, no trace, nothing from the body logged.

The database is made to fail with Django's own hook for wrapping every query
(`connection.execute_wrapper`), so every layer above the driver runs as in production.
A real outage against a real server is in tests/integration/test_database_outage.py.
"""

import contextlib
import logging
from urllib.parse import urlencode

import pytest
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, ProgrammingError, connection
from django.test import Client

from tests.factories import make_client

SECRET_IN_BODY = "cs_this-must-never-reach-a-log-line"


@contextlib.contextmanager
def database_fails(error: DatabaseError):
    def refuse(execute, sql, params, many, context):
        raise error

    with connection.execute_wrapper(refuse):
        yield


def token_post(**data):
    return Client().post("/v2/auth/oauth2/token", urlencode(data), content_type="application/x-www-form-urlencoded")


def assert_clean_503(response) -> None:
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Cache-Control"] == "no-store"
    body = response.content.decode()
    for leak in ("Traceback", 'File "', "OperationalError", "InterfaceError", "server closed"):
        assert leak not in body


def assert_api_503(response) -> None:
    assert_clean_503(response)
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "status": "error",
        "error": {
            "code": "service_unavailable",
            "message": "The service is temporarily unavailable. Try again in a few seconds.",
        },
    }


DOWN = [
    OperationalError("server closed the connection unexpectedly"),
    InterfaceError("connection already closed"),
]


@pytest.mark.parametrize("error", DOWN, ids=["operational", "interface"])
def test_an_api_call_is_a_503_in_the_api_shape(db, error):
    with database_fails(error):
        response = Client().get("/v2/me", HTTP_AUTHORIZATION="Bearer some-token")
    assert_api_503(response)


@pytest.mark.parametrize("error", DOWN, ids=["operational", "interface"])
def test_the_token_endpoint_is_a_503_in_the_api_shape(db, error):
    with database_fails(error):
        response = token_post(
            grant_type="refresh_token", refresh_token="x" * 43, client_id="app", client_secret=SECRET_IN_BODY
        )
    assert_api_503(response)


def test_a_page_is_a_503_html_page(end_user):
    browser = Client()
    browser.force_login(end_user)
    with database_fails(DOWN[0]):
        response = browser.get("/settings/developer/")
    assert_clean_503(response)
    assert response["Content-Type"].startswith("text/html")
    assert "Temporarily unavailable" in response.content.decode()


def test_it_logs_one_line_without_trace_or_body(db, caplog):
    caplog.set_level(logging.DEBUG)
    with database_fails(OperationalError("connection to server failed: Connection refused\nDETAIL: more")):
        token_post(grant_type="refresh_token", refresh_token="x" * 43, client_id="app", client_secret=SECRET_IN_BODY)
    [record] = [r for r in caplog.records if r.name == "plumbing.dbfailure"]
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert record.getMessage() == (
        "Database unavailable, answered 503: POST /v2/auth/oauth2/token "
        "(OperationalError: connection to server failed: Connection refused)"
    )
    assert all(SECRET_IN_BODY not in r.getMessage() for r in caplog.records)


def test_a_path_with_line_breaks_cannot_forge_log_lines(owner, caplog):
    browser = Client()
    browser.force_login(owner)
    with database_fails(DOWN[0]):
        response = browser.get("/settings/developer/clients/x%0AFAKE%20line/")
    assert response.status_code == 503
    [record] = [r for r in caplog.records if r.name == "plumbing.dbfailure"]
    assert "\n" not in record.getMessage() and "x\\nFAKE line" in record.getMessage()


@pytest.mark.parametrize("error", [ProgrammingError("relation does not exist"), IntegrityError("duplicate")])
def test_other_database_errors_stay_500(db, error):
    with database_fails(error):
        response = Client(raise_request_exception=False).get("/v2/me", HTTP_AUTHORIZATION="Bearer some-token")
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"


class FailAfterTheView:
    """Test-only: the database fails after the view returned (e.g. while the session is saved)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        self.get_response(request)
        raise OperationalError("terminating connection due to administrator command")


@pytest.mark.parametrize(("path", "api"), [("/v2/me", True), ("/accounts/login/", False)])
def test_a_failure_outside_the_view_is_the_same_503(db, settings, path, api):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.plumbing.test_dbfailure.FailAfterTheView"]
    response = Client(raise_request_exception=False).get(path)
    if api:
        assert_api_503(response)
    else:
        assert_clean_503(response)
        assert "Temporarily unavailable" in response.content.decode()


def test_nothing_changes_while_the_database_answers(owner):
    make_client(owner)
    browser = Client()
    browser.force_login(owner)
    assert browser.get("/settings/developer/").status_code == 200
    assert Client().get("/v2/me").status_code == 401
