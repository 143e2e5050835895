"""Access tokens for resource-endpoint tests, stored the way the token endpoint stores them.

A row made here is what `POST /v2/auth/oauth2/token` leaves behind (digest only, empty `token`
column, 30-minute expiry), minus the HTTP round trips. Tests that need the real flow (refresh
tokens, rotation) use tests/oauthflows/helpers.py instead.
"""

import secrets
from datetime import timedelta

import pytest
from django.utils import timezone

from oauthclients.models import AccessToken, digest
from scopes.catalog import SCOPE_NAMES
from tests.factories import make_client
from tests.oauthflows.helpers import exchange, get_code

ALL_SCOPES = " ".join(SCOPE_NAMES)


def bearer(raw_token: str, scheme: str = "Bearer") -> dict:
    """Test-client keyword arguments for `Authorization: <scheme> <token>`."""
    return {"HTTP_AUTHORIZATION": f"{scheme} {raw_token}"}


def access_token_create(*, user, client, scope: str, expires_in: int = 1800) -> str:
    """Store an access token for `user` issued to `client`; return its plaintext (shown once)."""
    raw = secrets.token_urlsafe(32)
    AccessToken.objects.create(
        user=user,
        application=client,
        token="",
        token_checksum=digest(raw),
        scope=scope,
        expires=timezone.now() + timedelta(seconds=expires_in),
    )
    return raw


def access_token_row(raw_token: str) -> AccessToken:
    return AccessToken.objects.select_related("application", "user").get(token_checksum=digest(raw_token))


@pytest.fixture
def issue_token(owner, end_user):
    """issue_token("BOOKING_READ TEAM_BOOKING_READ") -> plaintext of a live token for end_user.

    The client is approved and enabled for exactly the granted scopes; `legacy=True` issues from
    a legacy client instead (scope "" is its unrestricted token, anything else a migrated one).
    """

    def issue(scope: str, *, user=None, legacy: bool = False, expires_in: int = 1800) -> str:
        client = make_client(
            owner,
            scopes=None if legacy else scope.split(),
            is_legacy=legacy,
            approve=True,
        ).client
        return access_token_create(user=user or end_user, client=client, scope=scope, expires_in=expires_in)

    return issue


def tokens_through_http(browser, api, client, secret: str, scope: str | None) -> dict:
    """Authorize as the logged-in browser and exchange the code: the token endpoint's JSON body."""
    response = exchange(api, client, get_code(browser, client, scope=scope), secret=secret)
    assert response.status_code == 200, response.content
    return response.json()
