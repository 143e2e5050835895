"""What each limit counts per, read from requests the way the endpoints and forms read them."""

import json

import pytest
from django.test import RequestFactory

from plumbing import ratelimit
from plumbing.ratelimit import NO_ADDRESS, OVERSIZED, per_address, per_client, per_username
from tests.oauthflows.helpers import TOKEN, basic

FORM = "application/x-www-form-urlencoded"


def token_post(body, content_type=FORM, **headers):
    return RequestFactory().post(TOKEN, data=body, content_type=content_type, **headers)


def test_the_client_comes_from_basic_before_the_body():
    request = token_post("client_id=from-body", HTTP_AUTHORIZATION=basic("from basic+id", "secret"))
    assert per_client(request) == "from basic+id"
    assert per_client(token_post("client_id=from-body")) == "from-body"


def test_the_client_comes_from_a_json_body_as_the_endpoints_read_it():
    assert per_client(token_post(json.dumps({"client_id": "app"}), "application/json")) == "app"
    assert per_client(token_post(json.dumps({"client_id": 12345}), "application/json")) == "12345"
    assert per_client(token_post(json.dumps({"client_id": "a", "client_id2": "b"}), "application/json")) == "a"


@pytest.mark.parametrize(
    "body, content_type",
    [
        ("{not json", "application/json"),
        ("[" * 100_000 + "]" * 100_000, "application/json"),  # RecursionError in the parser
        (json.dumps(["client_id"]), "application/json"),
        (json.dumps({"client_id": True}), "application/json"),
        (b"client_id=\xff", "application/json"),
        ("client_id=app", "text/plain"),
        ("", FORM),
    ],
)
def test_an_unreadable_or_foreign_body_names_no_client(body, content_type):
    assert per_client(token_post(body, content_type)) is None


def test_a_body_over_djangos_upload_limit_names_no_client_and_raises_nothing(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    assert per_client(token_post("client_id=app&pad=" + "x" * 5000)) is None


@pytest.mark.parametrize("header", ["Basic !!!", "Basic " + "YWJj", "Bearer abc", "Basic"])
def test_a_malformed_basic_header_falls_back_to_the_body(header):
    assert per_client(token_post("client_id=from-body", HTTP_AUTHORIZATION=header)) == "from-body"


def test_overlong_values_share_one_counter_instead_of_being_hashed_one_by_one():
    assert per_client(token_post("client_id=" + "a" * 256)) == OVERSIZED
    assert per_client(token_post("client_id=" + "b" * 100_000)) == OVERSIZED
    assert per_client(token_post("client_id=" + "a" * 255)) == "a" * 255
    login = RequestFactory().post("/accounts/login/", {"username": "u" * 1000, "password": "x"})
    assert per_username(login) == OVERSIZED


def test_an_empty_username_is_not_counted():
    assert per_username(RequestFactory().post("/accounts/login/", {"password": "x"})) is None


def test_ipv4_is_counted_per_address_and_ipv6_per_slash_64():
    assert per_address(RequestFactory().post("/", REMOTE_ADDR="198.51.100.7")) == "198.51.100.7"
    assert per_address(RequestFactory().post("/", REMOTE_ADDR="2001:db8:1:2:3:4:5:6")) == "2001:db8:1:2::/64"


@pytest.mark.parametrize("username", ["alice", " alice", "alice\t", "ALICE", "Ａｌｉｃｅ", "\u3000Alice\u00a0"])
def test_the_username_is_normalised_as_the_login_form_does(username):
    login = RequestFactory().post("/accounts/login/", {"username": username, "password": "x"})
    assert per_username(login) == "alice"


@pytest.mark.parametrize("remote_addr", ["", "  "])
def test_a_request_without_an_address_shares_one_key_and_warns_once(monkeypatch, caplog, remote_addr):
    monkeypatch.setattr(ratelimit, "_no_address_warned", False)
    requests = [RequestFactory().post("/", REMOTE_ADDR=remote_addr) for _ in range(3)]
    with caplog.at_level("WARNING", logger="plumbing.ratelimit"):
        keys = {per_address(request) for request in requests}
    assert keys == {NO_ADDRESS}
    warnings = [r for r in caplog.records if "without a client address" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelname == "WARNING"


# --- the account a second factor's code is typed for -------------------------------------------------


def code_post(data, *, user=None, pending=None):
    from django.contrib.auth.models import AnonymousUser
    from django.contrib.sessions.backends.signed_cookies import SessionStore

    request = RequestFactory().post("/accounts/2fa/authenticate/", data)
    request.session, request.user = SessionStore(), user or AnonymousUser()
    if pending is not None:
        request.session[ratelimit.PENDING_LOGIN_SESSION_KEY] = pending
    return request


def test_the_account_is_the_pending_sign_ins_as_allauth_stores_it(end_user):
    from allauth.account.utils import user_pk_to_url_str

    pending = {"user_pk": user_pk_to_url_str(end_user), "initiated_at": 0}
    assert ratelimit.per_account_typing_a_code(code_post({"code": "123456"}, pending=pending)) == str(end_user.pk)
    # the same value as the signed-in user's (re-authentication): one budget per account
    assert ratelimit.per_account_typing_a_code(code_post({"code": "123456"}, user=end_user)) == str(end_user.pk)
    assert ratelimit.per_user(code_post({}, user=end_user)) == str(end_user.pk)


@pytest.mark.parametrize(
    "pending",
    [None, "not a dict", {}, {"user_pk": None}, {"user_pk": 7}, {"user_pk": "!!"}, {"user_pk": "z" * 300}],
)
def test_without_a_readable_pending_sign_in_no_account_is_counted(db, pending):
    assert ratelimit.per_account_typing_a_code(code_post({"code": "123456"}, pending=pending)) is None


def test_a_passkey_posted_at_the_second_step_has_no_per_account_limit(end_user):
    from allauth.account.utils import user_pk_to_url_str

    pending = {"user_pk": user_pk_to_url_str(end_user)}
    assert ratelimit.per_account_typing_a_code(code_post({"credential": "{}"}, pending=pending)) is None
    assert ratelimit.per_account_typing_a_code(code_post({"credential": "{}"}, user=end_user)) is None
