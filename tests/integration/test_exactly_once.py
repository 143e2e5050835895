"""Exactly once across processes: a real gunicorn with four sync workers, twenty requests at once.

PostgreSQL only: on SQLite every writer waits its turn, so a race through the server would prove
nothing (the sequential second redemption is tested in tests/oauthflows/test_token.py).
"""

import pytest

from oauthclients.models import AccessToken, Grant, RefreshToken, digest
from tests.integration.flows import (
    all_at_once,
    authorize,
    error_codes,
    exchange,
    form_post,
    login,
    me,
    refresh,
    statuses,
    winner,
)

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

RACERS = 20


def race_code(server, server_app, user_session):
    """One code redeemed by RACERS requests at once; (code, responses)."""
    client, secret = server_app
    code = authorize(user_session, server.url, client)
    return code, all_at_once(RACERS, lambda index: exchange(server.url, client, secret, code))


def race_refresh(server, server_app, user_session):
    """One refresh token presented by RACERS requests at once; (first tokens, family, responses)."""
    client, secret = server_app
    first = exchange(server.url, client, secret, authorize(user_session, server.url, client)).json()
    family = RefreshToken.objects.get().token_family
    responses = all_at_once(RACERS, lambda index: refresh(server.url, client.client_id, secret, first["refresh_token"]))
    return first, family, responses


def assert_no_orphan() -> None:
    """Every live refresh token has its access token, and every access token its refresh token."""
    assert not RefreshToken.objects.filter(revoked__isnull=True, access_token__isnull=True).exists()
    assert not AccessToken.objects.filter(refresh_token__isnull=True).exists()


def test_twenty_concurrent_redemptions_of_one_code_have_exactly_one_winner(server, server_app, user_session):
    client, secret = server_app
    code, responses = race_code(server, server_app, user_session)

    assert statuses(responses) == [200] + [400] * (RACERS - 1)
    assert error_codes(responses) == {"invalid_grant"}
    # One pair was minted, the winner's, and nothing else: no duplicate, no orphan. Codes are
    # strictly single use (RFC 9700 §4.5), so the losers' second presentations revoked that pair
    # (docs/choices.md, "Codes are single use"): no grace for codes, even for a racing duplicate.
    tokens = winner(responses)
    grant = Grant.objects.get(code=digest(code))
    assert grant.used_at is not None and grant.token_family is None
    pair = RefreshToken.objects.get()
    assert pair.revoked is not None and pair.token_checksum == digest(tokens["refresh_token"])
    assert not AccessToken.objects.exists()
    assert me(server.url, tokens["access_token"]).status_code == 401
    assert refresh(server.url, client.client_id, secret, tokens["refresh_token"]).status_code == 400


def test_twenty_concurrent_refreshes_of_one_token_have_exactly_one_winner(server, server_app, user_session):
    client, secret = server_app
    first, family, responses = race_refresh(server, server_app, user_session)

    assert statuses(responses) == [200] + [400] * (RACERS - 1)
    assert error_codes(responses) == {"invalid_grant"}
    # One rotation happened: the family holds the first token (rotated) and the winner's, no
    # other, and the winner's is live: the losers were in flight, so they revoked nothing.
    tokens = winner(responses)
    members = RefreshToken.objects.filter(token_family=family)
    assert sorted(members.values_list("token_checksum", flat=True)) == sorted(
        [digest(first["refresh_token"]), digest(tokens["refresh_token"])]
    )
    assert members.get(token_checksum=digest(first["refresh_token"])).revoked is not None
    assert members.get(revoked__isnull=True).token_checksum == digest(tokens["refresh_token"])
    assert AccessToken.objects.get().token_checksum == digest(tokens["access_token"])
    assert_no_orphan()
    assert me(server.url, first["access_token"]).status_code == 401
    assert me(server.url, tokens["access_token"]).status_code == 200
    renewed = refresh(server.url, client.client_id, secret, tokens["refresh_token"])
    assert renewed.status_code == 200
    assert me(server.url, renewed.json()["access_token"]).status_code == 200


def test_two_concurrent_generate_secret_posts_stop_at_two_active_secrets(server, server_app, app_owner):
    client, _secret = server_app
    developer = login(server.url, app_owner.username)
    path = f"/settings/developer/clients/{client.client_id}/secrets/generate/"
    token = developer.cookies["csrftoken"]

    responses = all_at_once(2, lambda index: form_post(developer, server.url, path, token))

    # One new secret made (303 to the page that shows it once), the other refused by the limit (409).
    assert statuses(responses) == [303, 409]
    assert client.secrets.filter(revoked_at__isnull=True).count() == 2
