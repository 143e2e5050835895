"""Removing expired codes and dead tokens, in batches (`manage.py cleartokens_expired`, from cron).

What goes, in this order (refresh tokens first, so that the access tokens they held are free to go
in the same run):

- refresh tokens revoked more than `revoked_retention` ago (default: the refresh token lifetime).
  Until then a replayed rotated token still revokes its family (RFC 9700 §4.14.2); afterwards it
  is merely unknown, which is also invalid_grant;
- live refresh tokens past their lifetime (OAUTH_REFRESH_TOKEN_LIFETIME after their access token
  expired), which the validator refuses anyway;
- live refresh tokens whose access token is gone (an out-of-band deletion), also refused;
- expired access tokens whose refresh token is revoked or gone. An expired access token whose
  refresh token is live stays: a refresh reads its expiry (the refresh token's lifetime counts
  from it);
- authorization codes past their expiry, used or not (a replay of an expired code is refused
  for its expiry alone);
- self-registered clients (RFC 7591, docs/agents.md) still unverified or pending that nobody
  authorized within OAUTH_UNUSED_REGISTRATION_DAYS: deleted as an owner's deletion is (kept,
  rejected, with an audit entry), so that open registration cannot fill the registry.

Each batch is one short transaction that deletes at most `batch_size` rows, and re-checks the
rule as it deletes, so the command can run while the servers serve.
"""

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from oauth2_provider.settings import oauth2_settings

from oauthclients.models import AccessToken, Grant, RefreshToken
from oauthclients.services import unused_registrations_remove
from signing.statuslist import status_lists_sweep

DEFAULT_BATCH_SIZE = 1000


@dataclass(frozen=True)
class ExpiredTokensDeleted:
    """How many rows each rule removed."""

    refresh_tokens_revoked: int
    refresh_tokens_expired: int
    refresh_tokens_orphaned: int
    access_tokens: int
    authorization_codes: int
    unused_registrations: int = 0
    status_lists: int = 0  # token status lists whose every JWT has expired (signing.statuslist)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def refresh_token_lifetime() -> timedelta:
    return timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)


def _delete_in_batches(queryset: QuerySet, *, batch_size: int) -> int:
    """Delete what `queryset` matches, `batch_size` rows per transaction, walking up the primary key."""
    label = queryset.model._meta.label
    deleted = 0
    last_pk = 0
    while True:
        batch = list(queryset.filter(pk__gt=last_pk).order_by("pk").values_list("pk", flat=True)[:batch_size])
        if not batch:
            return deleted
        last_pk = batch[-1]
        with transaction.atomic():
            # The rule is part of `queryset`, so a row that stopped matching since it was listed stays.
            _total, per_model = queryset.filter(pk__in=batch).delete()
        deleted += per_model.get(label, 0)


def expired_tokens_delete(
    *,
    now: datetime | None = None,
    revoked_retention: timedelta | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> ExpiredTokensDeleted:
    """Delete expired codes and tokens nothing can use any more (module docstring); counts per rule."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    now = now or timezone.now()
    lifetime = refresh_token_lifetime()
    retention = refresh_token_lifetime() if revoked_retention is None else revoked_retention

    def delete(queryset: QuerySet) -> int:
        return _delete_in_batches(queryset, batch_size=batch_size)

    live = Q(revoked__isnull=True)
    refresh_tokens_revoked = delete(RefreshToken.objects.filter(revoked__lte=now - retention))
    # Same test as the validator: unusable once its access token expired `lifetime` ago.
    refresh_tokens_expired = delete(RefreshToken.objects.filter(live, access_token__expires__lte=now - lifetime))
    refresh_tokens_orphaned = delete(RefreshToken.objects.filter(live, access_token__isnull=True))
    live_refresh_token = RefreshToken.objects.filter(live, access_token=OuterRef("pk"))
    access_tokens = delete(AccessToken.objects.filter(~Exists(live_refresh_token), expires__lte=now))
    authorization_codes = delete(Grant.objects.filter(expires__lte=now))
    return ExpiredTokensDeleted(
        refresh_tokens_revoked=refresh_tokens_revoked,
        refresh_tokens_expired=refresh_tokens_expired,
        refresh_tokens_orphaned=refresh_tokens_orphaned,
        access_tokens=access_tokens,
        authorization_codes=authorization_codes,
        unused_registrations=unused_registrations_remove(now=now),
        status_lists=status_lists_sweep(),
    )
