"""Whether a token is alive: the one place it is decided (issue 39, "One policy for clients and tokens").

A token ends when its client is rejected (deleted included, oauthclients.policy.client_tokens_end),
its user is made inactive, it is revoked (an access token's row deleted; a refresh token's
`revoked` set, or its access token gone; a code used), or it expires (a refresh token lives
REFRESH_TOKEN_EXPIRE_SECONDS past its access token's expiry, sliding with each rotation).

Every door asks `token_alive` (or `token_ended`, for the reason): the bearer check and
introspection (tokens.selectors), the code and refresh grants and introspection of a refresh token
(oauthflows.token.oauth2), the exchange's subject (oauthflows.token.exchange); the querysets that
list live tokens filter by its twin `alive_q` (Connected apps, oauthflows.pages.selectors).

The database's copies of this rule are registered SQL twins (plumbing.handwritten): the status list
triggers (signing.statuslist: a row deleted, a user made inactive, a client rejected) and the
redemption statements (tokens.redemption), compared with these functions on the same rows by
tests/test_sql_twins.py.
"""

import enum
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone
from oauth2_provider.settings import oauth2_settings

from oauthclients.models import AccessToken, Grant, RefreshToken
from oauthclients.policy import client_tokens_end, client_tokens_live_q


class Ended(enum.Enum):
    EXPIRED = "expired"
    REVOKED = "revoked"  # a refresh token revoked or without its access token; a code used
    USER_INACTIVE = "user inactive"
    CLIENT_REJECTED = "client rejected"


def _refresh_lifetime() -> timedelta:
    return timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)


def _own_end(token, now: datetime) -> Ended | None:
    if isinstance(token, RefreshToken):
        access = token.access_token if token.revoked is None and token.access_token_id is not None else None
        if access is None:
            return Ended.REVOKED
        return Ended.EXPIRED if access.expires + _refresh_lifetime() <= now else None
    if isinstance(token, Grant) and token.used_at is not None:
        return Ended.REVOKED
    # An access token or a code: DOT's is_expired (now >= expires).
    return Ended.EXPIRED if not token.expires or token.expires <= now else None


def token_ended(token, *, now: datetime | None = None) -> Ended | None:
    """Why an access token, refresh token or authorization code is dead, or None while it lives.
    Reads the token's own columns, its client's status and its user's is_active, in that order."""
    ended = _own_end(token, now or timezone.now())
    if ended is not None:
        return ended
    if client_tokens_end(token.application):
        return Ended.CLIENT_REJECTED
    if token.user is None or not token.user.is_active:
        return Ended.USER_INACTIVE
    return None


def token_alive(token, *, now: datetime | None = None) -> bool:
    return token is not None and token_ended(token, now=now) is None


def alive_q(model, *, now: datetime | None = None) -> Q:
    """The rows of `model` (AccessToken, RefreshToken, Grant) that token_alive would call alive:
    its twin for querysets (tests/test_sql_twins.py compares them)."""
    now = now or timezone.now()
    common = client_tokens_live_q("application") & Q(user__is_active=True)
    if model is RefreshToken:
        own = Q(revoked__isnull=True, access_token__isnull=False, access_token__expires__gt=now - _refresh_lifetime())
    elif model is Grant:
        own = Q(used_at__isnull=True, expires__gt=now)
    elif model is AccessToken:
        own = Q(expires__gt=now)
    else:
        raise TypeError(f"{model.__name__} is no token")
    return own & common
