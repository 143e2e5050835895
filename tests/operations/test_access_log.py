"""The request id (plumbing.requestid) and the access line (operations.middleware): an id taken
from X-Request-ID or made, returned, and on every line of that request; one access line per
request with client_id, user id, grant type, outcome and latency; JSON lines with LOG_FORMAT=json;
no key of a password reset or email confirmation link in any line, whatever the format."""

import io
import json
import logging
import re
from urllib.parse import urlencode

import pytest
from allauth.account.models import EmailAddress, EmailConfirmationHMAC
from django.core import mail
from django.test import Client

from operations.logs import JsonLines
from plumbing.logfilters import RedactCredentials
from plumbing.requestid import RequestIdFilter
from tests.factories import PASSWORD, make_user
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
                "redirect_uri": "https://app.example.com/cb",
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


def test_json_lines_carry_each_field_once(app, json_lines, settings):
    # LOG_FORMAT=json: the fields are keys of their own, and the message is the method and path.
    settings.LOG_FORMAT = "json"
    client, secret = app
    Client().post(
        "/v2/auth/oauth2/token",
        urlencode({"grant_type": "refresh_token", "refresh_token": "nope", "client_id": client.client_id}),
        content_type="application/x-www-form-urlencoded",
    )
    (line,) = [line for line in json_lines() if line["logger"] == "operations.access"]
    assert line["message"] == "POST /v2/auth/oauth2/token"
    assert (line["status"], line["outcome"], line["client_id"]) == (401, "invalid_client", client.client_id)


def test_a_json_line_path_is_redacted_in_its_message_too(json_lines, settings, db):
    settings.LOG_FORMAT = "json"
    Client().get("/v2/auth/oauth2/code=Sup3rSecretValue")
    (line,) = [line for line in json_lines() if line["logger"] == "operations.access"]
    assert line["message"] == "GET /v2/auth/oauth2/code=[redacted]" == "GET " + line["path"]


@pytest.mark.parametrize("created", [0.0, 1_764_124_615.417, 1_764_124_615.999, 1_764_124_616.0, 1_764_128_215.5])
def test_json_times_are_those_of_logging(created):
    # JsonLines makes each second's text once (operations/logs.py); what it writes is logging's own.
    formatter, plain = JsonLines(), logging.Formatter()
    for moment in (created, created + 0.25, created + 1, created):
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", (), None)
        record.created, record.msecs = moment, int((moment - int(moment)) * 1000)
        assert formatter.formatTime(record) == plain.formatTime(record)
        assert formatter.formatTime(record, "%H:%M") == plain.formatTime(record, "%H:%M")


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


@pytest.mark.django_db
def test_json_fields_are_redacted_like_the_message(json_lines):
    """The access line's own fields (client_id, path) go through the same redaction as its text: a
    client that puts a credential where its client_id goes, or a path that carries one, has it
    written in neither."""
    leaked = "Sup3rSecretValue"
    response = Client().post(
        "/v2/auth/oauth2/token",
        urlencode({"grant_type": "refresh_token", "client_id": f"app client_secret={leaked}", "refresh_token": "x"}),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code in (400, 401)
    Client().get(f"/v2/auth/oauth2/code={leaked}")
    lines = json_lines()
    access = [line for line in lines if line["logger"] == "operations.access"]
    assert [line["client_id"] for line in access if line.get("endpoint") == "token"] == ["app client_secret=[redacted]"]
    assert any(line["path"] == "/v2/auth/oauth2/code=[redacted]" for line in access)
    assert leaked not in json.dumps(lines)


def test_extra_fields_named_for_a_credential_are_redacted():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello %s", ("there",), None)
    record.__dict__.update(
        refresh_token="rt-plain", note="see access_token=at-plain", nested={"code": "c-plain"}, count=3
    )
    assert RedactCredentials().filter(record)
    assert record.refresh_token == "[redacted]"
    assert record.note == "see access_token=[redacted]"
    assert record.nested == {"code": "[redacted]"}
    assert record.count == 3 and record.getMessage() == "hello there"


# --- keys carried in a path (issue 38, finding 6) ------------------------------------------------------


@pytest.fixture(params=["json", "text"])
def console_output(request, settings, monkeypatch):
    """What the configured console handler (its own filters: config/settings.py LOGGING) writes, in
    either format, for every logger of a request."""
    settings.LOG_FORMAT = request.param  # the access line's shape (operations.middleware)
    (console,) = [handler for handler in logging.getLogger().handlers if handler.name == "console"]
    stream = io.StringIO()
    monkeypatch.setattr(console, "stream", stream)
    monkeypatch.setattr(
        console, "formatter", JsonLines() if request.param == "json" else logging.Formatter("%(message)s")
    )
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.INFO)
    return stream.getvalue


def test_a_reset_key_and_a_confirmation_key_never_reach_a_log_line(end_user, console_output):
    """The attack: a key read from the access line (`path` field and message) sets a new password, or
    confirms an address, in a fresh session. Each key below is followed for real (it works: the
    positive control), then looked for in everything the console wrote."""
    Client().post("/accounts/password/reset/", {"email": "enduser@example.com"})
    (message,) = mail.outbox
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/key/(\w+)-(\S+)/)", message.body)
    path, uid, key = link.group(1), link.group(2), link.group(3)
    reset = Client()
    opened = reset.get(path)
    assert opened.status_code == 302 and opened["Location"].endswith(f"/{uid}-set-password/")
    new_password = "a-password-set-by-the-link-42"
    assert reset.post(opened["Location"], {"password1": new_password, "password2": new_password}).status_code == 302
    assert type(end_user).objects.get(pk=end_user.pk).check_password(new_password)

    # The reset made the account's address (allauth); not verified yet.
    address = EmailAddress.objects.get(user=end_user, email="enduser@example.com", verified=False)
    confirmation = EmailConfirmationHMAC(address).key
    assert Client().post(f"/accounts/confirm-email/{confirmation}/").status_code == 302
    assert EmailAddress.objects.get(pk=address.pk).verified
    # A key that resolves nowhere is still a key: Django's "Not Found: <path>" line must not carry it.
    assert Client().get(f"/accounts/confirm-email/{confirmation}!/").status_code == 404

    written = console_output()
    for secret in (key, confirmation):
        assert secret not in written
    # What the lines still say: the path with its key redacted, the user id and allauth's redirect.
    assert f"/accounts/password/reset/key/{uid}-[redacted]/" in written
    assert f"/accounts/password/reset/key/{uid}-set-password/" in written
    assert "/accounts/confirm-email/[redacted]/" in written
    assert "Not Found: /accounts/confirm-email/[redacted]" in written
