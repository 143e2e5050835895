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
