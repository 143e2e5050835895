"""One-statement redemption of codes and refresh tokens (tokens.redemption), on PostgreSQL.

The fast path redeems with one statement when everything checks out; anything else goes the
full path (SELECT FOR UPDATE, checks one by one) and gets its precise error. A request refused
after its claim is rolled back, so the claim is undone. Races: tests/oauthclients/test_concurrency.py
and tests/integration/test_exactly_once.py.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from oauthclients.models import AccessToken, Grant, RefreshToken, digest
from tests.oauthflows.helpers import exchange, get_code, me, pkce_pair, refresh

pytestmark = pytest.mark.postgres_only


def statements(fn):
    with CaptureQueriesContext(connection) as captured:
        response = fn()
    return response, [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]


def _claim_sql(sql: list[str]) -> list[str]:
    return [s for s in sql if s.startswith(("UPDATE", "WITH"))]


def test_an_exchange_is_client_claim_and_the_pair(browser, api, confidential):
    client, secret = confidential
    exchange(api, client, get_code(browser, client), secret=secret)  # first use records last_used_at
    code = get_code(browser, client)
    response, sql = statements(lambda: exchange(api, client, code, secret=secret))
    assert response.status_code == 200, response.content
    assert len(sql) == 4, sql  # the secret, the claim (UPDATE ... RETURNING), the access and refresh INSERTs
    assert _claim_sql(sql)[0].startswith('UPDATE "oauthclients_grant"') and "RETURNING" in sql[1]
    assert not any("FOR UPDATE" in s for s in sql)
    grant = Grant.objects.get(code=digest(code))
    assert grant.used_at is not None
    assert RefreshToken.objects.get(token_checksum=digest(response.json()["refresh_token"])).token_family == (
        grant.token_family
    )


def test_a_public_client_with_pkce_is_claimed_and_a_wrong_verifier_is_not(browser, api, public):
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge, code_challenge_method="S256")
    wrong, _ = pkce_pair()
    response, sql = statements(lambda: exchange(api, public, code, verifier=wrong))
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert any("FOR UPDATE" in s for s in sql)  # the full path gave the error
    assert Grant.objects.get(code=digest(code)).used_at is None  # and burned nothing
    response, sql = statements(lambda: exchange(api, public, code, verifier=verifier))
    assert response.status_code == 200, response.content
    assert not any("FOR UPDATE" in s for s in sql)


def test_a_replayed_code_takes_the_full_path_and_revokes_the_family(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    tokens = exchange(api, client, code, secret=secret).json()
    response = exchange(api, client, code, secret=secret)
    assert response.status_code == 400 and "already been used" in response.json()["error_description"]
    assert me(api, tokens["access_token"]).status_code == 401


def test_an_expired_code_or_a_wrong_redirect_uri_is_not_claimed(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    response = exchange(api, client, code, secret=secret, redirect_uri="http://localhost:8765/cb")
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    Grant.objects.filter(code=digest(code)).update(expires=timezone.now() - timedelta(seconds=1))
    response = exchange(api, client, code, secret=secret)
    assert response.status_code == 400 and "expired" in response.json()["error_description"]
    assert Grant.objects.get(code=digest(code)).used_at is None


def test_a_refresh_is_client_claim_and_the_pair(browser, api, confidential):
    client, secret = confidential
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    response, sql = statements(lambda: refresh(api, client, tokens["refresh_token"], secret=secret))
    assert response.status_code == 200, response.content
    # The secret, the claim (lock, revoke, delete the old access token: one statement), 2 INSERTs.
    assert len(sql) == 4, sql
    assert _claim_sql(sql)[0].startswith("WITH old AS")
    assert me(api, tokens["access_token"]).status_code == 401  # the old access token is gone
    assert not AccessToken.objects.filter(token_checksum=digest(tokens["access_token"])).exists()
    new = response.json()
    assert me(api, new["access_token"]).status_code == 200
    old = RefreshToken.objects.get(token_checksum=digest(tokens["refresh_token"]))
    assert old.revoked is not None and old.access_token_id is None
    # The rotated token, presented again, takes the full path: the family dies (RFC 9700 §4.14.2).
    replay = refresh(api, client, tokens["refresh_token"], secret=secret)
    assert replay.status_code == 400
    assert refresh(api, client, new["refresh_token"], secret=secret).status_code == 400


def test_a_refresh_refused_after_its_claim_is_rolled_back(browser, api, confidential):
    client, secret = confidential
    tokens = exchange(api, client, get_code(browser, client, scope="PROFILE_READ"), secret=secret).json()
    # invalid_scope is decided after validate_refresh_token has claimed the token.
    response = refresh(api, client, tokens["refresh_token"], secret=secret, scope="PROFILE_READ BOOKING_READ")
    assert response.status_code == 400 and response.json()["error"] == "invalid_scope"
    rt = RefreshToken.objects.get(token_checksum=digest(tokens["refresh_token"]))
    assert rt.revoked is None and rt.access_token_id is not None  # the claim was undone
    assert me(api, tokens["access_token"]).status_code == 200
    assert refresh(api, client, tokens["refresh_token"], secret=secret).status_code == 200


def test_an_inactive_user_or_expired_pair_is_not_claimed(browser, api, confidential, end_user):
    client, secret = confidential
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    AccessToken.objects.filter(token_checksum=digest(tokens["access_token"])).update(
        expires=timezone.now() - timedelta(days=365)
    )
    assert refresh(api, client, tokens["refresh_token"], secret=secret).status_code == 400
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    # A bulk update: no signal, so deactivation's own revocation (user_access_end) does not run.
    type(end_user).objects.filter(pk=end_user.pk).update(is_active=False)
    assert refresh(api, client, tokens["refresh_token"], secret=secret).status_code == 400
    assert RefreshToken.objects.get(token_checksum=digest(tokens["refresh_token"])).revoked is None


def test_an_openid_exchange_takes_nonce_auth_time_and_sid_from_the_claim(browser, api, confidential, end_user):
    import json

    from jwcrypto import jwk, jwt

    from signing.keys import signing_key_create

    signing_key_create(algorithm="RS256")
    client, secret = confidential
    exchange(api, client, get_code(browser, client), secret=secret)  # first use records last_used_at
    code = get_code(browser, client, scope="openid PROFILE_READ", nonce="claimed-nonce")
    grant = Grant.objects.get(code=digest(code))
    assert grant.nonce == "claimed-nonce" and grant.auth_time is not None and grant.sid
    response, sql = statements(lambda: exchange(api, client, code, secret=secret))
    assert response.status_code == 200, response.content
    # The secret, the claim, the signing key, the ID token's row, the access and refresh INSERTs:
    # nothing re-reads the grant (no FOR UPDATE, no second SELECT of it).
    assert len(sql) == 6, sql
    assert not any("FOR UPDATE" in s or ('FROM "oauthclients_grant"' in s and s.startswith("SELECT")) for s in sql)
    keys = jwk.JWKSet.from_json(api.get("/.well-known/jwks.json").content)
    claims = json.loads(jwt.JWT(key=keys, jwt=response.json()["id_token"]).claims)
    assert claims["nonce"] == "claimed-nonce"
    assert claims["sid"] == grant.sid
    assert claims["auth_time"] == int(grant.auth_time.timestamp())
    assert claims["sub"] == str(end_user.pk)
