"""POST /v2/auth/oauth2/revoke (RFC 7009)."""

import pytest

from oauthclients.models import AccessToken, RefreshToken
from tests.factories import make_client
from tests.oauthflows.helpers import REVOKE, basic, client_post, exchange, get_code, me, pkce_pair, refresh
from tests.oauthflows.test_token import assert_token_error, assert_tokens


@pytest.fixture
def tokens(browser, api, confidential):
    client, secret = confidential
    return assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")


def revoke(api, client, token, *, secret=None, hint=None, **kw):
    data = {"token": token}
    if hint:
        data["token_type_hint"] = hint
    return client_post(api, REVOKE, client, data, secret=secret, **kw)


def assert_ok(response):
    assert response.status_code == 200, response.content
    assert response.content == b""
    assert response["Cache-Control"] == "no-store"


@pytest.mark.parametrize("hint", [None, "access_token", "refresh_token"])
def test_revoking_an_access_token_kills_it_and_its_refresh_token(api, confidential, tokens, hint):
    client, secret = confidential
    assert_ok(revoke(api, client, tokens["access_token"], secret=secret, hint=hint))
    assert me(api, tokens["access_token"]).status_code == 401
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret=secret), "invalid_grant")


@pytest.mark.parametrize("hint", [None, "access_token", "refresh_token"])
def test_revoking_a_refresh_token_kills_its_whole_family(browser, api, confidential, tokens, hint):
    client, secret = confidential
    rotated = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), "PROFILE_READ")
    other_install = assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
    assert_ok(revoke(api, client, rotated["refresh_token"], secret=secret, hint=hint))
    assert me(api, rotated["access_token"]).status_code == 401
    assert_token_error(refresh(api, client, rotated["refresh_token"], secret=secret), "invalid_grant")
    assert me(api, other_install["access_token"]).status_code == 200


def test_basic_authentication_and_json_bodies_work(api, confidential, tokens):
    client, secret = confidential
    assert_ok(revoke(api, client, tokens["access_token"], auth=basic(client.client_id, secret), as_json=True))
    assert me(api, tokens["access_token"]).status_code == 401


def test_an_unknown_token_is_200_and_changes_nothing(api, confidential, tokens):
    client, secret = confidential
    assert_ok(revoke(api, client, "no-such-token", secret=secret))
    assert me(api, tokens["access_token"]).status_code == 200


def test_another_clients_token_is_200_and_left_alone(api, confidential, tokens, owner):
    other = make_client(owner, name="Other", approve=True)
    assert_ok(revoke(api, other.client, tokens["access_token"], secret=other.secret.plaintext))
    assert_ok(revoke(api, other.client, tokens["refresh_token"], secret=other.secret.plaintext))
    assert me(api, tokens["access_token"]).status_code == 200
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 1


def test_a_public_client_revokes_its_own_token_with_client_id_only(browser, api, public):
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge)
    tokens = assert_tokens(exchange(api, public, code, verifier=verifier), "PROFILE_READ")
    assert_ok(revoke(api, public, tokens["refresh_token"]))
    assert me(api, tokens["access_token"]).status_code == 401


def test_bad_client_credentials_are_invalid_client(api, confidential, tokens):
    client, _ = confidential
    assert_token_error(revoke(api, client, tokens["access_token"], secret="wrong"), "invalid_client", 401)
    assert_token_error(revoke(api, client, tokens["access_token"]), "invalid_client", 401)
    assert me(api, tokens["access_token"]).status_code == 200


def test_a_missing_token_is_invalid_request(api, confidential):
    client, secret = confidential
    assert_token_error(client_post(api, REVOKE, client, {}, secret=secret), "invalid_request")


def test_an_unsupported_token_type_hint_is_refused(api, confidential, tokens):
    client, secret = confidential
    response = revoke(api, client, tokens["access_token"], secret=secret, hint="id_token")
    assert_token_error(response, "unsupported_token_type", allowed={"unsupported_token_type"})
    assert AccessToken.objects.count() == 1


def test_a_token_in_the_query_string_is_refused(api, confidential, tokens):
    client, secret = confidential
    response = api.post(
        f"{REVOKE}?token={tokens['access_token']}",
        data=f"client_id={client.client_id}&client_secret={secret}",
        content_type="application/x-www-form-urlencoded",
    )
    assert_token_error(response, "invalid_request")
    assert me(api, tokens["access_token"]).status_code == 200


def test_get_is_not_allowed(api):
    assert api.get(REVOKE).status_code == 405
