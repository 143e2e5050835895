"""GET and PATCH /v2/me (spec §4.4): the authorized user's profile."""

import json

import pytest

from profiles.models import Profile
from tests.factories import make_user
from tests.oauthflows.helpers import ME, me
from tests.scopes.responses import (
    assert_insufficient_scope,
    assert_invalid_token,
    assert_no_token,
    assert_success,
    error_of,
)
from tests.scopes.tokens import tokens_through_http

pytestmark = pytest.mark.django_db

FIELDS = {"id", "username", "email", "name", "timeZone", "locale", "timeFormat", "weekStart"}


def patch(client, token, body, content_type="application/json"):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return me(client, token, "patch", data=data, content_type=content_type)


@pytest.fixture
def reader(issue_token):
    return issue_token("PROFILE_READ")


@pytest.fixture
def writer(issue_token):
    return issue_token("PROFILE_READ PROFILE_WRITE")


@pytest.fixture
def profile(end_user):
    return Profile.objects.create(
        user=end_user,
        name="Ada Lovelace",
        time_zone="Europe/London",
        locale="en-GB",
        time_format=12,
        week_start="Sunday",
    )


# --- GET --------------------------------------------------------------------------------------


def test_it_shows_the_authorized_users_profile(client, reader, end_user, profile):
    data = assert_success(me(client, reader))
    assert data == {
        "id": end_user.pk,
        "username": end_user.username,
        "email": end_user.email,
        "name": "Ada Lovelace",
        "timeZone": "Europe/London",
        "locale": "en-GB",
        "timeFormat": 12,
        "weekStart": "Sunday",
    }


def test_without_a_profile_row_it_shows_defaults_and_writes_nothing(client, reader, end_user):
    data = assert_success(me(client, reader))
    assert set(data) == FIELDS
    assert data["id"] == end_user.pk and data["username"] == end_user.username
    assert {k: data[k] for k in ("name", "timeZone", "locale", "timeFormat", "weekStart")} == {
        "name": "",
        "timeZone": "UTC",
        "locale": "en",
        "timeFormat": 24,
        "weekStart": "Monday",
    }
    assert not Profile.objects.exists()


def test_each_token_shows_its_own_users_profile(client, issue_token, end_user, other_developer):
    mine = assert_success(me(client, issue_token("PROFILE_READ")))
    theirs = assert_success(me(client, issue_token("PROFILE_READ", user=other_developer)))
    assert (mine["id"], theirs["id"]) == (end_user.pk, other_developer.pk)
    assert theirs["username"] == other_developer.username


@pytest.mark.parametrize(
    "granted", ["PROFILE_WRITE", "BOOKING_READ EVENT_TYPE_READ", "ORG_PROFILE_READ TEAM_PROFILE_READ"]
)
def test_reading_needs_profile_read(client, issue_token, granted):
    response = me(client, issue_token(granted))
    assert_insufficient_scope(response, required="PROFILE_READ", granted=granted)


def test_reading_needs_a_token(client):
    assert_no_token(client.get(ME))


def test_reading_with_a_dead_token_is_refused(client, issue_token):
    assert_invalid_token(me(client, issue_token("PROFILE_READ", expires_in=-1)))


# --- PATCH ------------------------------------------------------------------------------------


def test_it_updates_the_profile_and_returns_it(client, writer, end_user, profile):
    body = {
        "name": "Ada King",
        "timeZone": "America/New_York",
        "locale": "fr",
        "timeFormat": 24,
        "weekStart": "Saturday",
    }
    data = assert_success(patch(client, writer, body))
    assert {k: data[k] for k in body} == body
    assert data["id"] == end_user.pk and data["email"] == end_user.email
    profile.refresh_from_db()
    assert (profile.name, profile.time_zone, profile.locale, profile.time_format, profile.week_start) == (
        "Ada King",
        "America/New_York",
        "fr",
        24,
        "Saturday",
    )


def test_a_partial_update_keeps_the_other_fields(client, writer, profile):
    data = assert_success(patch(client, writer, {"timeZone": "Asia/Tokyo"}))
    assert data["timeZone"] == "Asia/Tokyo"
    assert (data["name"], data["locale"], data["timeFormat"], data["weekStart"]) == (
        "Ada Lovelace",
        "en-GB",
        12,
        "Sunday",
    )


def test_the_first_update_creates_the_profile_from_the_defaults(client, writer, end_user):
    data = assert_success(patch(client, writer, {"name": "Grace"}))
    assert (data["name"], data["timeZone"], data["timeFormat"]) == ("Grace", "UTC", 24)
    assert Profile.objects.get(user=end_user).name == "Grace"


def test_a_later_read_sees_the_update(client, writer):
    assert_success(patch(client, writer, {"weekStart": "Wednesday", "timeFormat": 12}))
    data = assert_success(me(client, writer))
    assert (data["weekStart"], data["timeFormat"]) == ("Wednesday", 12)


def test_the_name_may_be_cleared(client, writer, profile):
    assert assert_success(patch(client, writer, {"name": ""}))["name"] == ""


@pytest.mark.parametrize("granted", ["PROFILE_READ", "BOOKING_WRITE EVENT_TYPE_WRITE"])
def test_updating_needs_profile_write_and_writes_nothing_without_it(client, issue_token, granted):
    response = patch(client, issue_token(granted), {"name": "Mallory"})
    assert_insufficient_scope(response, required="PROFILE_WRITE", granted=granted)
    assert not Profile.objects.exists()


def test_profile_write_alone_may_update(client, issue_token):
    assert assert_success(patch(client, issue_token("PROFILE_WRITE"), {"locale": "de"}))["locale"] == "de"


def test_updating_needs_a_token(client):
    assert_no_token(client.patch(ME, data="{}", content_type="application/json"))
    assert not Profile.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"timeZone": "Mars/Olympus_Mons"}, "timeZone"),
        ({"timeZone": "utc"}, "timeZone"),
        ({"timeZone": ""}, "timeZone"),
        ({"timeZone": None}, "timeZone"),
        ({"timeZone": ["UTC"]}, "timeZone"),
        ({"locale": "english"}, "locale"),
        ({"locale": "EN"}, "locale"),
        ({"locale": "en_GB"}, "locale"),
        ({"locale": ""}, "locale"),
        ({"timeFormat": 13}, "timeFormat"),
        ({"timeFormat": "12h"}, "timeFormat"),
        ({"timeFormat": None}, "timeFormat"),
        ({"timeFormat": True}, "timeFormat"),
        ({"weekStart": "Funday"}, "weekStart"),
        ({"weekStart": 1}, "weekStart"),
        ({"name": "x" * 256}, "name"),
        ({"name": None}, "name"),
        ({"name": {"first": "Ada"}}, "name"),
        ({"email": "new@example.com"}, "email"),
        ({"username": "root"}, "username"),
        ({"id": 1}, "id"),
        ({"favouriteColour": "blue"}, "favouriteColour"),
        ({"time_zone": "UTC"}, "time_zone"),
        ({"name": "Valid", "email": "new@example.com"}, "email"),
    ],
)
def test_an_invalid_update_is_a_400_naming_the_field_and_changes_nothing(client, writer, profile, body, field):
    error = error_of(patch(client, writer, body), 400)
    assert error["code"] == "validation_error"
    assert field in error["details"], error
    assert field in error["message"], error
    profile.refresh_from_db()
    assert (profile.name, profile.time_zone, profile.locale) == ("Ada Lovelace", "Europe/London", "en-GB")


@pytest.mark.parametrize("body", ["[]", '["name"]', '"Ada"', "42", "null", "true"])
def test_a_body_that_is_not_a_json_object_is_a_400(client, writer, body):
    error = error_of(patch(client, writer, body), 400)
    assert error["code"] == "validation_error"
    assert not Profile.objects.exists()


@pytest.mark.parametrize("body", ["{", '{"name": }', "{'name': 'Ada'}", b"\xff\xfe"])
def test_a_body_that_is_not_json_is_a_400(client, writer, body):
    error = error_of(patch(client, writer, body), 400)
    assert error["code"] == "parse_error"
    assert not Profile.objects.exists()


@pytest.mark.parametrize("body", ["[" * 100_000 + "]" * 100_000, '{"name":' * 100_000 + "1" + "}" * 100_000])
def test_a_body_nested_too_deeply_to_decode_is_a_400(client, writer, body):
    error = error_of(patch(client, writer, body), 400)
    assert error["code"] == "parse_error"


def test_a_body_over_the_upload_limit_is_a_413_in_the_error_shape(client, writer, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    error = error_of(patch(client, writer, {"name": "x" * 1_000}), 413)
    assert error["code"] == "request_too_large"
    assert not Profile.objects.exists()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("name=Ada", "application/x-www-form-urlencoded"),
        ('{"name": "Ada"}', "text/plain"),
        ('{"name": "Ada"}', "application/xml"),
        ('{"name": "Ada"}', ""),
        ('{"name": "Ada"}', "application/octet-stream"),
        (
            '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nAda\r\n--x--\r\n',
            "multipart/form-data; boundary=x",
        ),
    ],
)
def test_a_body_that_is_not_json_typed_is_a_415(client, writer, body, content_type):
    error = error_of(patch(client, writer, body, content_type=content_type), 415)
    assert error["code"] == "unsupported_media_type"
    assert not Profile.objects.exists()


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_other_methods_are_405(client, issue_token, method):
    token = issue_token("PROFILE_READ PROFILE_WRITE")
    response = me(client, token, method, data="{}", content_type="application/json")
    assert error_of(response, 405)["code"] == "method_not_allowed"


# --- legacy clients and the real flow ---------------------------------------------------------


def test_a_legacy_clients_unrestricted_token_may_read_and_update(client, issue_token, end_user):
    token = issue_token("", legacy=True)
    assert assert_success(me(client, token))["id"] == end_user.pk
    assert assert_success(patch(client, token, {"timeFormat": 12}))["timeFormat"] == 12
    assert Profile.objects.get(user=end_user).time_format == 12


def test_a_token_from_the_authorization_flow_reads_and_updates(client, browser, api, confidential, end_user):
    app, secret = confidential
    body = tokens_through_http(browser, api, app, secret, "PROFILE_READ PROFILE_WRITE")
    assert assert_success(patch(client, body["access_token"], {"name": "Flow User"}))["name"] == "Flow User"
    assert assert_success(me(client, body["access_token"]))["name"] == "Flow User"
    assert Profile.objects.get(user=end_user).name == "Flow User"


def test_a_token_from_the_flow_without_profile_write_may_not_update(client, browser, api, confidential):
    app, secret = confidential
    body = tokens_through_http(browser, api, app, secret, "PROFILE_READ")
    response = patch(client, body["access_token"], {"name": "Flow User"})
    assert_insufficient_scope(response, required="PROFILE_WRITE", granted="PROFILE_READ")
    assert not Profile.objects.exists()


def test_a_user_without_an_email_still_has_a_profile(client, issue_token):
    user = make_user("noemail")
    user.email = ""
    user.save(update_fields=["email"])
    data = assert_success(me(client, issue_token("PROFILE_READ", user=user)))
    assert data["email"] == "" and data["username"] == "noemail"


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token", "Basic eDp5"])
def test_options_answers_204_with_allow_and_needs_no_token(client, authorization):
    # RFC 9110 §9.3.7; with or without a (bad) token, never a 401.
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = client.options(ME, **headers)
    assert response.status_code == 204 and response.content == b""
    assert set(response["Allow"].split(", ")) == {"GET", "PATCH", "HEAD", "OPTIONS"}
    assert not response.has_header("WWW-Authenticate")


def test_other_methods_still_need_a_token(client):
    assert_no_token(client.get(ME))
    assert_no_token(client.patch(ME, data="{}", content_type="application/json"))
