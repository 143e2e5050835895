"""POST /v2/auth/oauth2/revoke (RFC 7009)."""

import pytest

from oauthclients.models import RefreshToken
from tests.factories import make_client
from tests.oauthflows.helpers import (
    REVOKE,
    assert_tokens,
    basic,
    client_post,
    exchange,
    get_code,
    me,
    pkce_pair,
    refresh,
)
from tests.oauthflows.test_token import assert_token_error


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


@pytest.mark.parametrize("hint", ["id_token", "saml", "code"])
def test_an_unknown_hint_is_ignored_and_every_type_searched(browser, api, confidential, tokens, hint):
    # RFC 7009 §2.1: never unsupported_token_type for a hint.
    client, secret = confidential
    assert_ok(revoke(api, client, tokens["access_token"], secret=secret, hint=hint))
    assert me(api, tokens["access_token"]).status_code == 401
    other = assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
    assert_ok(revoke(api, client, other["refresh_token"], secret=secret, hint=hint))
    assert_token_error(refresh(api, client, other["refresh_token"], secret=secret), "invalid_grant")


def test_every_200_is_the_same_empty_answer_without_a_content_type(api, confidential, tokens):
    # RFC 7009 §2.2: valid, unknown and already revoked tokens answer alike.
    client, secret = confidential
    answers = [
        revoke(api, client, tokens["access_token"], secret=secret),
        revoke(api, client, tokens["access_token"], secret=secret),
        revoke(api, client, "no-such-token", secret=secret),
    ]
    for response in answers:
        assert_ok(response)
        assert not response.has_header("Content-Type")
    assert me(api, tokens["access_token"]).status_code == 401


@pytest.mark.parametrize("use_basic", [True, False])
def test_invalid_client_challenges_basic_never_bearer(api, confidential, tokens, use_basic):
    # RFC 6749 §5.2.
    client, _ = confidential
    if use_basic:
        response = revoke(api, client, tokens["access_token"], auth=basic(client.client_id, "wrong"))
    else:
        response = revoke(api, client, tokens["access_token"], secret="wrong")
    assert_token_error(response, "invalid_client", 401)
    assert response["WWW-Authenticate"] == 'Basic realm="oauth"'


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
