"""A resource server introspects any access token this server issued (RFC 7662), and does nothing else."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from oauthclients import services
from oauthclients.models import AccessToken, OAuthClient, RefreshToken, digest
from tests.factories import make_client
from tests.oauthflows.helpers import INTROSPECT, REVOKE, basic, client_post, exchange, get_code, refresh
from tests.oauthflows.test_token import assert_token_error

GRANTED = "PROFILE_READ ORG_PROFILE_READ"


@pytest.fixture
def token_scope():
    return GRANTED


def ask(api, resource_server, token, **kw):
    client, secret = resource_server
    return client_post(api, INTROSPECT, client, {"token": token}, auth=basic(client.client_id, secret), **kw)


def inactive(response) -> bool:
    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    assert response.json() == {"active": False}
    return True


def test_it_learns_everything_a_resource_server_needs_about_any_apps_token(
    api, resource_server, tokens, confidential, end_user, settings
):
    response = ask(api, resource_server, tokens["access_token"])
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    body = response.json()
    now = int(timezone.now().timestamp())
    assert body == {
        "active": True,
        "scope": GRANTED,  # as granted: ORG_PROFILE_READ is not expanded to TEAM_PROFILE_READ
        "client_id": confidential[0].client_id,
        "username": end_user.username,
        "sub": str(end_user.pk),
        "exp": body["exp"],
        "iat": body["iat"],
        "iss": settings.OAUTH_ISSUER,
        "token_type": "Bearer",
        "unrestricted": False,
    }
    assert 1790 <= body["exp"] - now <= 1800 and abs(body["iat"] - now) <= 5


def test_it_may_authenticate_in_the_body_too(api, resource_server, tokens):
    client, secret = resource_server
    response = client_post(api, INTROSPECT, client, {"token": tokens["access_token"]}, secret=secret)
    assert response.json()["active"] is True


def test_a_legacy_token_is_unrestricted_with_an_empty_scope(api, resource_server, browser, legacy):
    client, secret = legacy
    tokens = exchange(api, client, get_code(browser, client, scope=None), secret=secret).json()
    body = ask(api, resource_server, tokens["access_token"]).json()
    assert (body["active"], body["scope"], body["unrestricted"]) == (True, "", True)


def test_a_refresh_token_is_never_active_for_a_resource_server(api, resource_server, tokens):
    assert inactive(ask(api, resource_server, tokens["refresh_token"]))


def test_a_token_type_hint_changes_nothing(api, resource_server, tokens):
    client, secret = resource_server
    for hint in ("refresh_token", "access_token"):
        body = client_post(
            api, INTROSPECT, client, {"token": tokens["access_token"], "token_type_hint": hint}, secret=secret
        ).json()
        assert body["active"] is True


def test_an_expired_token_is_inactive(api, resource_server, tokens):
    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    assert inactive(ask(api, resource_server, tokens["access_token"]))


def test_a_revoked_token_is_inactive(api, resource_server, tokens, confidential):
    client, secret = confidential
    assert client_post(api, REVOKE, client, {"token": tokens["access_token"]}, secret=secret).status_code == 200
    assert inactive(ask(api, resource_server, tokens["access_token"]))


def test_a_rotated_away_token_is_inactive(api, resource_server, tokens, confidential):
    client, secret = confidential
    assert refresh(api, client, tokens["refresh_token"], secret=secret).status_code == 200
    assert inactive(ask(api, resource_server, tokens["access_token"]))


def test_a_rejected_clients_token_is_inactive(api, resource_server, tokens, confidential, reviewer):
    assert ask(api, resource_server, tokens["access_token"]).json()["active"] is True
    services.client_reject(client=confidential[0], actor=reviewer, reason="Abuse")
    assert inactive(ask(api, resource_server, tokens["access_token"]))


def test_an_inactive_users_token_is_inactive(api, resource_server, tokens, end_user):
    end_user.is_active = False
    end_user.save(update_fields=["is_active"])
    assert inactive(ask(api, resource_server, tokens["access_token"]))


@pytest.mark.parametrize("garbage", ["nope", "x" * 600, "é"])
def test_garbage_is_inactive(api, resource_server, garbage):
    assert inactive(ask(api, resource_server, garbage))


def test_it_is_one_indexed_lookup_after_client_authentication(api, resource_server, tokens):
    ask(api, resource_server, tokens["access_token"])  # records the secret's "last used" minute
    executed = []

    def record(execute, sql, params, many, context):
        if not sql.startswith(("SAVEPOINT", "RELEASE")):
            executed.append((sql, tuple(params or ())))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert ask(api, resource_server, tokens["access_token"]).json()["active"] is True
    assert len(executed) == 2, executed  # the secret joined to its client; the token joined to client and user
    # The second is the lookup of this very token, by its digest's indexed column.
    sql, params = executed[1]
    assert "token_checksum" in sql and digest(tokens["access_token"]) in params, executed[1]


def test_without_its_secret_it_learns_nothing(api, resource_server, tokens):
    client, _secret = resource_server
    response = client_post(api, INTROSPECT, client, {"token": tokens["access_token"]})  # client_id alone
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"
    wrong = client_post(
        api, INTROSPECT, client, {"token": tokens["access_token"]}, auth=basic(client.client_id, "cs_x")
    )
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"].startswith("Basic")


def test_a_rejected_resource_server_stops_at_once(api, resource_server, tokens, reviewer):
    assert ask(api, resource_server, tokens["access_token"]).json()["active"] is True
    services.client_reject(client=resource_server[0], actor=reviewer, reason="Decommissioned")
    response = ask(api, resource_server, tokens["access_token"])
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"


def test_an_app_still_cannot_introspect_another_apps_token(api, tokens, owner):
    other = make_client(owner, name="Other", approve=True)
    response = client_post(
        api, INTROSPECT, other.client, {"token": tokens["access_token"]}, secret=other.secret.plaintext
    )
    assert inactive(response)


@pytest.mark.parametrize("grant_type", ["authorization_code", "refresh_token"])
def test_every_grant_is_unauthorized_client(api, resource_server, grant_type):
    client, secret = resource_server
    data = {"grant_type": grant_type, "code": "x", "refresh_token": "x", "redirect_uri": "https://x.example.com/cb"}
    response = client_post(api, "/v2/auth/oauth2/token", client, data, secret=secret)
    assert_token_error(response, "unauthorized_client", status=400)
    assert "introspect" in response.json()["error_description"]


def test_it_cannot_revoke(api, resource_server, tokens):
    client, secret = resource_server
    response = client_post(api, REVOKE, client, {"token": tokens["access_token"]}, secret=secret)
    assert response.status_code == 400 and response.json()["error"] == "unauthorized_client"
    assert AccessToken.objects.filter(token_checksum=digest(tokens["access_token"])).exists()
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 1


def test_an_authorization_request_naming_it_is_refused_like_an_unknown_client(browser, resource_server):
    client, _ = resource_server
    known = browser.get(
        "/auth/oauth2/authorize",
        {"client_id": client.client_id, "redirect_uri": "https://x.example.com/cb", "scope": "PROFILE_READ"},
    )
    unknown = browser.get(
        "/auth/oauth2/authorize",
        {"client_id": "no-such-client", "redirect_uri": "https://x.example.com/cb", "scope": "PROFILE_READ"},
    )
    assert known.status_code == unknown.status_code == 400
    assert not known.has_header("Location")
    assert "Unknown application" in known.content.decode()
    assert OAuthClient.objects.get(pk=client.pk).status == "approved"
