"""POST /v2/auth/oauth2/introspect (RFC 7662)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from oauthclients import services
from oauthclients.models import AccessToken
from tests.factories import make_client
from tests.oauthflows.helpers import (
    INTROSPECT,
    METADATA,
    assert_tokens,
    basic,
    client_post,
    exchange,
    get_code,
    pkce_pair,
    refresh,
)
from tests.oauthflows.test_token import assert_token_error


@pytest.fixture
def token_scope():
    return "PROFILE_READ BOOKING_READ"


def introspect(api, client, token, *, secret=None, hint=None, **kw):
    data = {"token": token}
    if hint:
        data["token_type_hint"] = hint
    response = client_post(api, INTROSPECT, client, data, secret=secret, **kw)
    return response


def inactive(response):
    assert response.status_code == 200, response.content
    assert response.json() == {"active": False}
    return True


def test_an_active_access_token_is_described(api, confidential, tokens, end_user):
    client, secret = confidential
    response = introspect(api, client, tokens["access_token"], secret=secret)
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    body = response.json()
    assert body["active"] is True
    assert body["scope"] == "PROFILE_READ BOOKING_READ"
    assert (body["client_id"], body["username"], body["sub"], body["token_type"]) == (
        client.client_id,
        end_user.username,
        str(end_user.pk),
        "Bearer",
    )
    assert body["unrestricted"] is False
    assert 1700 <= body["exp"] - int(timezone.now().timestamp()) <= 1800
    assert body["iss"] == "http://testserver"


def test_an_active_refresh_token_is_described(api, confidential, tokens):
    client, secret = confidential
    body = introspect(api, client, tokens["refresh_token"], secret=secret, hint="refresh_token").json()
    assert body["active"] is True and body["token_type"] == "refresh_token"  # never a bearer token
    assert body["scope"] == "PROFILE_READ BOOKING_READ"


def test_the_hint_is_only_a_hint(api, confidential, tokens):
    client, secret = confidential
    assert introspect(api, client, tokens["refresh_token"], secret=secret, hint="access_token").json()["active"] is True
    assert introspect(api, client, tokens["access_token"], secret=secret, hint="refresh_token").json()["active"] is True


def test_basic_authentication_and_json_work(api, confidential, tokens):
    client, secret = confidential
    response = introspect(api, client, tokens["access_token"], auth=basic(client.client_id, secret), as_json=True)
    assert response.json()["active"] is True


def test_another_clients_token_is_just_inactive(api, tokens, owner):
    other = make_client(owner, name="Other", approve=True)
    assert inactive(introspect(api, other.client, tokens["access_token"], secret=other.secret.plaintext))
    assert inactive(introspect(api, other.client, tokens["refresh_token"], secret=other.secret.plaintext))


def test_unknown_expired_rotated_and_revoked_tokens_are_inactive(api, confidential, tokens):
    client, secret = confidential
    assert inactive(introspect(api, client, "nope", secret=secret))
    rotated = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), "PROFILE_READ BOOKING_READ")
    assert inactive(introspect(api, client, tokens["refresh_token"], secret=secret))
    assert inactive(introspect(api, client, tokens["access_token"], secret=secret))
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    assert inactive(introspect(api, client, rotated["access_token"], secret=secret))


def test_tokens_of_a_rejected_client_are_inactive_and_it_cannot_ask(api, confidential, tokens, reviewer):
    client, secret = confidential
    services.client_reject(client=client, actor=reviewer, reason="Abuse")
    assert_token_error(introspect(api, client, tokens["access_token"], secret=secret), "invalid_client", 401)


def test_a_public_client_is_invalid_client_as_the_metadata_says(browser, api, public):
    # RFC 8414 §2: introspection_endpoint_auth_methods_supported has no "none", so a client
    # without a secret is not authenticated here, whichever way it identifies itself.
    verifier, challenge = pkce_pair()
    tokens = assert_tokens(
        exchange(api, public, get_code(browser, public, code_challenge=challenge), verifier=verifier), "PROFILE_READ"
    )
    assert "none" not in api.get(METADATA).json()["introspection_endpoint_auth_methods_supported"]
    assert_token_error(introspect(api, public, tokens["access_token"]), "invalid_client", 401)
    response = introspect(api, public, tokens["access_token"], auth=basic(public.client_id, ""))
    assert_token_error(response, "invalid_client", 401)


def test_unauthenticated_or_wrong_secret_is_invalid_client(api, confidential, tokens):
    client, _ = confidential
    assert_token_error(introspect(api, client, tokens["access_token"], secret="wrong"), "invalid_client", 401)
    assert_token_error(introspect(api, client, tokens["access_token"]), "invalid_client", 401)


def test_a_missing_token_is_invalid_request(api, confidential):
    client, secret = confidential
    assert_token_error(client_post(api, INTROSPECT, client, {}, secret=secret), "invalid_request")


@pytest.mark.parametrize("hint", ["saml", "id_token", "", "ACCESS_TOKEN"])
def test_an_unknown_hint_is_ignored_and_every_type_searched(api, confidential, tokens, hint):
    # RFC 7662 §2.1: the hint is only a hint; never unsupported_token_type.
    client, secret = confidential
    for name in ("access_token", "refresh_token"):
        response = introspect(api, client, tokens[name], secret=secret, hint=hint or None, as_json=False)
        assert response.status_code == 200 and response.json()["active"] is True
    assert inactive(introspect(api, client, "nope", secret=secret, hint=hint))


@pytest.mark.parametrize("use_basic", [True, False])
def test_invalid_client_challenges_basic_never_bearer(api, confidential, tokens, use_basic):
    # RFC 6749 §5.2.
    client, _ = confidential
    if use_basic:
        response = introspect(api, client, tokens["access_token"], auth=basic(client.client_id, "wrong"))
    else:
        response = introspect(api, client, tokens["access_token"], secret="wrong")
    assert_token_error(response, "invalid_client", 401)
    assert response["WWW-Authenticate"] == 'Basic realm="oauth"'


def test_an_app_and_a_resource_server_get_the_same_shape(api, confidential, tokens, reviewer):
    from tests.factories import make_resource_server

    client, secret = confidential
    server = make_resource_server(reviewer)
    as_app = introspect(api, client, tokens["access_token"], secret=secret).json()
    as_server = introspect(api, server.client, tokens["access_token"], secret=server.secret.plaintext).json()
    assert as_app == as_server
    assert set(as_app) == {
        "active",
        "scope",
        "client_id",
        "username",
        "sub",
        "exp",
        "iat",
        "iss",
        "token_type",
        "unrestricted",
    }
