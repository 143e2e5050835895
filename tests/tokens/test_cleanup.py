"""tokens.cleanup.expired_tokens_delete: each rule's deleted and kept cases.

Tokens come from the real flow (code exchange, refresh) and are then aged by moving their
timestamps back; a kept token is proved still usable through the token endpoint.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from oauthclients.models import AccessToken, Grant, RefreshToken, digest
from tests.oauthflows.helpers import exchange, get_code, me, refresh
from tokens.cleanup import ExpiredTokensDeleted, expired_tokens_delete, refresh_token_lifetime

NOTHING = ExpiredTokensDeleted(0, 0, 0, 0, 0)


def issue(browser, api, confidential) -> dict:
    client, secret = confidential
    response = exchange(api, client, get_code(browser, client), secret=secret)
    assert response.status_code == 200, response.content
    return response.json()


def rotate(api, confidential, tokens: dict) -> dict:
    client, secret = confidential
    response = refresh(api, client, tokens["refresh_token"], secret=secret)
    assert response.status_code == 200, response.content
    return response.json()


def refresh_token_of(tokens: dict) -> RefreshToken:
    return RefreshToken.objects.get(token_checksum=digest(tokens["refresh_token"]))


def age_access_token(tokens: dict, *, expired_for: timedelta) -> None:
    AccessToken.objects.filter(token_checksum=digest(tokens["access_token"])).update(
        expires=timezone.now() - expired_for
    )


def counts(**deleted) -> ExpiredTokensDeleted:
    return ExpiredTokensDeleted(**{**NOTHING.as_dict(), **deleted})


# --- authorization codes ---


def test_expired_codes_go_used_or_not_and_live_ones_stay(browser, api, confidential):
    client, _secret = confidential
    issue(browser, api, confidential)  # a used code
    get_code(browser, client)  # an unused code
    Grant.objects.update(expires=timezone.now() - timedelta(seconds=1))
    fresh_unused = get_code(browser, client)
    fresh_used = issue(browser, api, confidential)

    assert expired_tokens_delete() == counts(authorization_codes=2)

    assert Grant.objects.count() == 2
    assert Grant.objects.filter(code=digest(fresh_unused)).exists()
    # The tokens of the used, expired code are untouched: codes and tokens live apart.
    assert AccessToken.objects.count() == 2
    assert me(api, fresh_used["access_token"]).status_code == 200


# --- access tokens ---


def test_an_expired_access_token_whose_refresh_token_is_live_stays_and_still_refreshes(browser, api, confidential):
    tokens = issue(browser, api, confidential)
    age_access_token(tokens, expired_for=timedelta(days=1))

    assert expired_tokens_delete() == NOTHING

    assert me(api, tokens["access_token"]).status_code == 401  # expired, yet needed for the refresh
    renewed = rotate(api, confidential, tokens)
    assert me(api, renewed["access_token"]).status_code == 200


def test_an_expired_access_token_without_refresh_token_goes(browser, api, confidential):
    tokens = issue(browser, api, confidential)
    refresh_token_of(tokens).delete()
    age_access_token(tokens, expired_for=timedelta(seconds=1))

    assert expired_tokens_delete() == counts(access_tokens=1)
    assert not AccessToken.objects.exists()


def test_an_expired_access_token_whose_refresh_token_is_revoked_goes(browser, api, confidential):
    tokens = issue(browser, api, confidential)
    # Revocation normally deletes the access token at once; this covers a row left behind anyway.
    RefreshToken.objects.update(revoked=timezone.now())
    age_access_token(tokens, expired_for=timedelta(seconds=1))

    assert expired_tokens_delete() == counts(access_tokens=1)
    assert not AccessToken.objects.exists()
    assert RefreshToken.objects.count() == 1  # revoked recently: kept for replay detection


def test_an_unexpired_access_token_stays_even_without_refresh_token(browser, api, confidential):
    tokens = issue(browser, api, confidential)
    refresh_token_of(tokens).delete()

    assert expired_tokens_delete() == NOTHING
    assert me(api, tokens["access_token"]).status_code == 200


# --- refresh tokens ---


def test_a_live_refresh_token_past_its_lifetime_goes_with_its_access_token(browser, api, confidential):
    tokens = issue(browser, api, confidential)
    age_access_token(tokens, expired_for=refresh_token_lifetime() + timedelta(seconds=1))

    assert expired_tokens_delete() == counts(refresh_tokens_expired=1, access_tokens=1)
    assert not RefreshToken.objects.exists() and not AccessToken.objects.exists()


def test_a_live_refresh_token_within_its_lifetime_stays_and_refreshes(browser, api, confidential):
    tokens = issue(browser, api, confidential)
    age_access_token(tokens, expired_for=refresh_token_lifetime() - timedelta(minutes=1))

    assert expired_tokens_delete() == NOTHING
    rotate(api, confidential, tokens)


def test_a_live_refresh_token_whose_access_token_is_gone_goes(browser, api, confidential):
    issue(browser, api, confidential)
    AccessToken.objects.all().delete()  # out of band: the refresh token is left an orphan

    assert expired_tokens_delete() == counts(refresh_tokens_orphaned=1)
    assert not RefreshToken.objects.exists()


def test_a_rotated_refresh_token_stays_for_the_retention_and_its_replay_still_revokes_the_family(
    browser, api, confidential
):
    client, secret = confidential
    first = issue(browser, api, confidential)
    second = rotate(api, confidential, first)
    RefreshToken.objects.filter(revoked__isnull=False).update(
        revoked=timezone.now() - refresh_token_lifetime() + timedelta(minutes=1)
    )

    assert expired_tokens_delete() == NOTHING

    assert refresh(api, client, first["refresh_token"], secret=secret).status_code == 400
    assert me(api, second["access_token"]).status_code == 401  # the replay revoked the family


def test_refresh_tokens_revoked_longer_ago_than_the_retention_go(browser, api, confidential):
    first = issue(browser, api, confidential)
    second = rotate(api, confidential, first)
    RefreshToken.objects.filter(revoked__isnull=False).update(revoked=timezone.now() - refresh_token_lifetime())

    assert expired_tokens_delete() == counts(refresh_tokens_revoked=1)
    assert not RefreshToken.objects.filter(token_checksum=digest(first["refresh_token"])).exists()
    rotate(api, confidential, second)  # the live member of the family is untouched


def test_the_retention_of_revoked_refresh_tokens_can_be_shortened(browser, api, confidential):
    rotate(api, confidential, issue(browser, api, confidential))
    rotate(api, confidential, issue(browser, api, confidential))
    rotated = RefreshToken.objects.filter(revoked__isnull=False).order_by("pk")
    rotated.filter(pk=rotated[0].pk).update(revoked=timezone.now() - timedelta(days=8))
    rotated.filter(pk=rotated[1].pk).update(revoked=timezone.now() - timedelta(days=6))

    assert expired_tokens_delete(revoked_retention=timedelta(days=7)) == counts(refresh_tokens_revoked=1)
    assert RefreshToken.objects.filter(revoked__isnull=False).count() == 1
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 2


# --- batches ---


def test_it_deletes_in_batches_of_the_given_size(browser, api, confidential):
    client, _secret = confidential
    for _ in range(25):
        get_code(browser, client)
    Grant.objects.update(expires=timezone.now() - timedelta(seconds=1))

    with CaptureQueriesContext(connection) as queries:
        deleted = expired_tokens_delete(batch_size=10)

    assert deleted == counts(authorization_codes=25)
    assert not Grant.objects.exists()
    grant_deletes = [q["sql"] for q in queries if q["sql"].startswith('DELETE FROM "oauthclients_grant"')]
    assert len(grant_deletes) == 3


def test_a_batch_size_below_one_is_refused(db):
    with pytest.raises(ValueError, match="batch_size"):
        expired_tokens_delete(batch_size=0)
