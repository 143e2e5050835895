"""OpenID Connect userinfo (Core §5.3): bearer token with `openid`, claims by scope, RFC 6750 errors."""

import pytest

from profiles.models import Profile
from signing.keys import signing_key_create
from tests.factories import make_client, make_tokens
from tests.oauthflows.helpers import exchange, get_code

USERINFO = "/v2/auth/oauth2/userinfo"


def _token(browser, api, app, scope: str) -> str:
    client, secret = app
    code = get_code(browser, client, scope=scope)
    return exchange(api, client, code, secret=secret).json()["access_token"]


@pytest.fixture(autouse=True)
def signing_key(db):
    return signing_key_create(algorithm="RS256")


def test_profile_and_email_claims_come_from_the_profile_by_scope(browser, api, app, end_user):
    end_user.email = "end@example.com"
    end_user.save(update_fields=["email"])
    Profile.objects.create(user=end_user, name="Ada Lovelace", time_zone="Europe/London", locale="en-GB")
    token = _token(browser, api, app, "openid profile email")
    response = api.get(USERINFO, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert response.json() == {
        "sub": str(end_user.pk),
        "preferred_username": end_user.username,
        "name": "Ada Lovelace",
        "zoneinfo": "Europe/London",
        "locale": "en-GB",
        "email": "end@example.com",
        "email_verified": False,
    }


def test_openid_alone_gives_the_subject_only_and_post_works_too(browser, api, app, end_user):
    token = _token(browser, api, app, "openid")
    response = api.post(USERINFO, HTTP_AUTHORIZATION=f"bearer {token}")
    assert response.status_code == 200
    assert response.json() == {"sub": str(end_user.pk)}


def test_profile_without_a_profile_row_uses_the_defaults(browser, api, app, end_user):
    token = _token(browser, api, app, "openid profile")
    claims = api.get(USERINFO, HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert claims["zoneinfo"] == "UTC" and claims["locale"] == "en"
    assert "email" not in claims


def test_no_token_is_401_with_a_bearer_challenge(api):
    response = api.get(USERINFO)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="userinfo"'


@pytest.mark.parametrize("header", ["Bearer nope", "Bearer ", "Bearer a b", "Bearer \u00e9t\u00e9"])
def test_a_bad_token_is_401_invalid_token(api, header):
    response = api.get(USERINFO, HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_a_token_in_the_query_is_ignored(browser, api, app):
    token = _token(browser, api, app, "openid")
    assert api.get(USERINFO + f"?access_token={token}").status_code == 401


def test_a_token_without_openid_is_403_insufficient_scope(browser, api, app, end_user):
    client, _secret = app
    access, _refresh = make_tokens(end_user, client, scope="PROFILE_READ")
    response = api.get(USERINFO, HTTP_AUTHORIZATION=f"Bearer {access}")
    assert response.status_code == 403
    assert response["WWW-Authenticate"].startswith('Bearer realm="userinfo", error="insufficient_scope"')
    assert 'scope="openid"' in response["WWW-Authenticate"]


def test_a_revoked_token_is_refused(browser, api, app):
    client, secret = app
    token = _token(browser, api, app, "openid")
    api.post(
        "/v2/auth/oauth2/revoke",
        data=f"token={token}&client_id={client.client_id}&client_secret={secret}",
        content_type="application/x-www-form-urlencoded",
    )
    assert api.get(USERINFO, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401


def test_a_page_of_an_approved_public_client_may_read_it(api, owner, end_user):
    spa = make_client(owner, kind="public", redirect_uris=["https://spa.example.com/cb"], approve=True).client
    access, _refresh = make_tokens(end_user, spa, scope="openid")
    response = api.get(USERINFO, HTTP_AUTHORIZATION=f"Bearer {access}", HTTP_ORIGIN="https://spa.example.com")
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "https://spa.example.com"
    other = api.get(USERINFO, HTTP_AUTHORIZATION=f"Bearer {access}", HTTP_ORIGIN="https://evil.example.com")
    assert not other.has_header("Access-Control-Allow-Origin")
