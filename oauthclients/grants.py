"""One rule for ending grants: a client's (rejection, deletion, removal), a user's (deactivation),
or one user's with one client (Connected apps' revoke). Beside the models, so that every caller
reaches it: the caller holds the lock it needs and writes its own audit row."""

from dataclasses import dataclass

from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from oauthclients.models import AccessToken, Grant, OAuthClient, RefreshToken

# Sent by grants_end inside its transaction, with the `client` and the `user` it was given (either
# may be None): an app above the registry that keeps a part of a grant ends its part there, and
# returns how many rows it ended. `tokens` ends the standing consents (tokens.consents.consents_end):
# the registry sits below it and cannot import it (docs/architecture.md).
grants_ending = Signal()


@dataclass(frozen=True)
class GrantsEnded:
    """What grants_end ended (counts only: never a token or a code)."""

    access_tokens: int
    refresh_tokens: int
    codes: int
    consents: int


@transaction.atomic
def grants_end(*, client: OAuthClient | None = None, user=None) -> GrantsEnded:
    """End every grant of `client`, of `user`, or of `user` with `client`: live refresh tokens
    revoked (and unlinked from their access token), access tokens deleted, codes not yet exchanged
    used up (RFC 6749 §4.1.2: they must not become tokens afterwards), standing consents deleted
    (grants_ending)."""
    if client is None and user is None:
        raise ValueError("grants_end ends the grants of a client, of a user, or of both: name one.")
    of = {}
    if client is not None:
        of["application"] = client
    if user is not None:
        of["user"] = user
    now = timezone.now()
    refresh_tokens = RefreshToken.objects.filter(revoked__isnull=True, **of).update(
        revoked=now, access_token=None, updated=now
    )
    # Every token descending from the grant, whatever grant issued it: exchanged and ID-JAG ones too.
    _, deleted = AccessToken.objects.descending_from_grant(client=client, user=user).delete()
    codes = Grant.objects.filter(used_at__isnull=True, **of).update(used_at=now, token_family=None, updated=now)
    consents = sum(ended for _receiver, ended in grants_ending.send(sender=OAuthClient, client=client, user=user))
    return GrantsEnded(
        access_tokens=deleted.get(AccessToken._meta.label, 0),
        refresh_tokens=refresh_tokens,
        codes=codes,
        consents=consents,
    )
