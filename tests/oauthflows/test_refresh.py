"""POST /v2/auth/oauth2/token with grant_type=refresh_token (spec §4.3, RFC 6749 §6, RFC 9700 §4.14)."""

from datetime import timedelta

from django.utils import timezone

from oauthclients import services
from oauthclients.models import AccessToken, RefreshToken
from tests.factories import make_client
from tests.oauthflows.helpers import assert_tokens, basic, exchange, get_code, me, refresh, token_request
from tests.oauthflows.test_token import assert_token_error

SCOPES = "PROFILE_READ PROFILE_WRITE BOOKING_READ"


def first_tokens(browser, api, client, secret, scope=SCOPES):
    return assert_tokens(exchange(api, client, get_code(browser, client, scope=scope), secret=secret), scope)


def test_every_refresh_rotates_and_kills_the_old_refresh_token(browser, api, confidential):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    renewed = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), SCOPES)
    assert renewed["refresh_token"] != tokens["refresh_token"]
    assert renewed["access_token"] != tokens["access_token"]
    assert me(api, renewed["access_token"]).status_code == 200
    assert_tokens(refresh(api, client, renewed["refresh_token"], secret=secret), SCOPES)


def test_scopes_of_the_original_authorization_are_kept(browser, api, confidential):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    for _ in range(3):
        tokens = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), SCOPES)


def test_a_scope_parameter_may_narrow(browser, api, confidential):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    narrowed = assert_tokens(
        refresh(api, client, tokens["refresh_token"], secret=secret, scope="PROFILE_READ"), "PROFILE_READ"
    )
    assert me(api, narrowed["access_token"]).status_code == 200
    assert (
        me(
            api, narrowed["access_token"], method="patch", data={"name": "x"}, content_type="application/json"
        ).status_code
        == 403
    )


def test_a_scope_parameter_may_not_widen(browser, api, confidential):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret, scope="PROFILE_READ")
    response = refresh(api, client, tokens["refresh_token"], secret=secret, scope="PROFILE_READ PROFILE_WRITE")
    assert_token_error(response, "invalid_scope")


def test_replaying_a_rotated_refresh_token_revokes_the_family_only(browser, api, confidential):
    client, secret = confidential
    install_a = first_tokens(browser, api, client, secret)
    install_b = first_tokens(browser, api, client, secret)
    rotated = assert_tokens(refresh(api, client, install_a["refresh_token"], secret=secret), SCOPES)
    # The stale token comes back (a thief, or a confused client): the whole family dies.
    assert_token_error(refresh(api, client, install_a["refresh_token"], secret=secret), "invalid_grant")
    assert me(api, rotated["access_token"]).status_code == 401
    assert_token_error(refresh(api, client, rotated["refresh_token"], secret=secret), "invalid_grant")
    # The user's other install of the same app is untouched.
    assert me(api, install_b["access_token"]).status_code == 200
    assert_tokens(refresh(api, client, install_b["refresh_token"], secret=secret), SCOPES)


def test_another_clients_refresh_token_is_invalid_grant_and_harms_nothing(browser, api, confidential, owner):
    client, secret = confidential
    other = make_client(owner, name="Other", redirect_uris=client.redirect_uri_list, approve=True)
    tokens = first_tokens(browser, api, client, secret)
    response = refresh(api, other.client, tokens["refresh_token"], secret=other.secret.plaintext)
    assert_token_error(response, "invalid_grant")
    assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), SCOPES)


def test_an_unknown_refresh_token_is_invalid_grant(api, confidential):
    client, secret = confidential
    assert_token_error(refresh(api, client, "not-a-token", secret=secret), "invalid_grant")


def test_an_access_token_is_not_a_refresh_token(browser, api, confidential):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    assert_token_error(refresh(api, client, tokens["access_token"], secret=secret), "invalid_grant")


def test_refresh_needs_client_authentication(browser, api, confidential):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    assert_token_error(refresh(api, client, tokens["refresh_token"]), "invalid_client", 401)
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret="wrong"), "invalid_client", 401)
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    assert_tokens(token_request(api, data, auth=basic(client.client_id, secret)), SCOPES)


def test_refresh_works_with_either_secret_of_a_rotation(browser, api, confidential, owner):
    client, old_secret = confidential
    tokens = first_tokens(browser, api, client, old_secret)
    new_secret = services.client_secret_create(client=client, actor=owner).plaintext
    tokens = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=new_secret), SCOPES)
    tokens = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=old_secret), SCOPES)
    old = client.secrets.get(hint=old_secret[:7])
    services.client_secret_revoke(client=client, secret_id=old.pk, actor=owner)
    # Existing tokens stay valid (spec §3); the revoked secret fails at once.
    assert me(api, tokens["access_token"]).status_code == 200
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret=old_secret), "invalid_client", 401)
    assert_tokens(refresh(api, client, tokens["refresh_token"], secret=new_secret), SCOPES)


def test_a_public_client_refreshes_without_a_secret(browser, api, public):
    from tests.oauthflows.helpers import pkce_pair

    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge)
    tokens = assert_tokens(exchange(api, public, code, verifier=verifier), "PROFILE_READ")
    assert_tokens(refresh(api, public, tokens["refresh_token"]), "PROFILE_READ")


def test_a_rejected_client_can_neither_refresh_nor_use_its_tokens(browser, api, confidential, reviewer):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    services.client_reject(client=client, actor=reviewer, reason="Abuse")
    assert me(api, tokens["access_token"]).status_code == 401
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret=secret), "invalid_client", 401)


def test_a_client_sent_back_to_review_keeps_issued_access_tokens_but_cannot_refresh(browser, api, confidential, owner):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    services.client_update(
        client=client,
        actor=owner,
        name="Renamed",
        purpose=client.purpose,
        website_url=client.website_url,
        redirect_uris=client.redirect_uri_list,
        scopes=client.scope_list,
    )
    assert me(api, tokens["access_token"]).status_code == 200
    # The pending client still authenticates, but serves only its owner's account.
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret=secret), "unauthorized_client")


def test_a_refresh_token_past_its_lifetime_is_invalid_grant(browser, api, confidential, settings):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    AccessToken.objects.update(expires=timezone.now() - timedelta(days=91))
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret=secret), "invalid_grant")


def test_the_old_access_token_dies_with_rotation_and_nothing_is_orphaned(browser, api, confidential):
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    renewed = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), SCOPES)
    assert me(api, tokens["access_token"]).status_code == 401
    assert AccessToken.objects.count() == 1
    live = RefreshToken.objects.filter(revoked__isnull=True)
    assert live.count() == 1 and live.get().access_token is not None
    assert me(api, renewed["access_token"]).status_code == 200


def test_a_duplicate_within_the_grace_window_is_refused_without_revoking(browser, api, confidential, settings):
    settings.OAUTH_REPLAY_GRACE_SECONDS = 5
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    rotated = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), SCOPES)
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret=secret), "invalid_grant")
    assert me(api, rotated["access_token"]).status_code == 200
    assert_tokens(refresh(api, client, rotated["refresh_token"], secret=secret), SCOPES)


def test_a_replay_after_the_grace_window_revokes_the_family(browser, api, confidential, settings):
    settings.OAUTH_REPLAY_GRACE_SECONDS = 5
    client, secret = confidential
    tokens = first_tokens(browser, api, client, secret)
    rotated = assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), SCOPES)
    RefreshToken.objects.filter(revoked__isnull=False).update(revoked=timezone.now() - timedelta(seconds=6))
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret=secret), "invalid_grant")
    assert me(api, rotated["access_token"]).status_code == 401
