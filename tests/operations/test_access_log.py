"""The request id (plumbing.requestid) and the access line (operations.middleware): an id taken
from X-Request-ID or made, returned, and on every line of that request; one access line per
request with client_id, user id, grant type, outcome and latency; JSON lines with LOG_FORMAT=json."""

import io
import json
import logging
from urllib.parse import urlencode

import pytest
from django.test import Client

from operations.logs import JsonLines
from plumbing.logfilters import RedactCredentials
from plumbing.requestid import RequestIdFilter
from tests.factories import PASSWORD, make_client, make_user
from tests.oauthflows.helpers import exchange, get_code


@pytest.fixture
def json_lines():
    """What the console handler writes with LOG_FORMAT=json, for the loggers of a request."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactCredentials())
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    root.removeHandler(handler)
    root.setLevel(old_level)


@pytest.fixture
def app(db):
    owner = make_user("owner")
    created = make_client(owner, redirect_uris=["https://app.example/cb"], scopes=["PROFILE_READ"], approve=True)
    return created.client, created.secret.plaintext


def test_a_sane_request_id_is_kept_and_returned(app, json_lines):
    client, secret = app
    response = Client().post(
        "/v2/auth/oauth2/token",
        urlencode(
            {
                "grant_type": "authorization_code",
                "code": "nope",
                "client_id": client.client_id,
                "client_secret": secret,
                "redirect_uri": "https://app.example/cb",
            }
        ),
        content_type="application/x-www-form-urlencoded",
        HTTP_X_REQUEST_ID="lb-7f3a.42",
    )
    assert response.status_code == 400 and response["X-Request-ID"] == "lb-7f3a.42"
    lines = json_lines()
    access = [line for line in lines if line["logger"] == "operations.access"]
    assert len(access) == 1
    line = access[0]
    assert line["request_id"] == "lb-7f3a.42"
    assert line["client_id"] == client.client_id
    assert line["grant_type"] == "authorization_code" and line["outcome"] == "invalid_grant"
    assert line["status"] == 400 and line["latency_ms"] > 0 and line["endpoint"] == "token"
    assert all(other["request_id"] == "lb-7f3a.42" for other in lines if other["logger"] != "operations.access")
    assert secret not in json.dumps(lines)


@pytest.mark.parametrize("sent", ["", "a b", "x\r\ninjected", "é", "a" * 129])
def test_an_unusable_request_id_is_replaced(sent, db):
    response = Client().get("/v2/scopes", HTTP_X_REQUEST_ID=sent)
    made = response["X-Request-ID"]
    assert made != sent and len(made) == 32 and made.isalnum()


def test_each_request_gets_its_own_id(db):
    assert Client().get("/v2/scopes")["X-Request-ID"] != Client().get("/v2/scopes")["X-Request-ID"]


def test_the_access_line_names_the_user_of_an_issued_token_and_the_authorize_client(app, json_lines):
    client, secret = app
    user = make_user("reader")
    browser = Client()
    assert browser.login(username=user.username, password=PASSWORD)
    code = get_code(browser, client)
    issued = exchange(Client(), client, code, secret=secret).json()
    lines = json_lines()
    token_line = [line for line in lines if line.get("endpoint") == "token"][-1]
    assert token_line["outcome"] == "issued" and token_line["user_id"] == user.pk
    authorize_line = [line for line in lines if line.get("endpoint") == "authorize"][0]
    assert authorize_line["client_id"] == client.client_id and authorize_line["user_id"] == user.pk
    everything = json.dumps(lines)
    for value in (secret, code, issued["access_token"], issued["refresh_token"]):
        assert value not in everything


def test_text_lines_by_default(app, caplog):
    caplog.set_level(logging.INFO, logger="operations.access")
    Client().get("/v2/scopes")
    (record,) = [r for r in caplog.records if r.name == "operations.access"]
    assert record.getMessage().startswith("GET /v2/scopes status=200 latency_ms=")


@pytest.mark.django_db
def test_a_request_the_stack_refused_unread_keeps_its_answer():
    # 3000 parameters: refused 414 before anything parses them; the access line must not parse them
    # either (Django would raise TooManyFieldsSent and turn the answer into a 400).
    response = Client().get("/auth/oauth2/authorize?client_id=x" + "&a=1" * 3000)
    assert response.status_code == 414
