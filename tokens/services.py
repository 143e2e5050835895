"""The one writer of issued token rows, recording where each token comes from.

Every grant stores what it issues here: the code and refresh grants (oauthflows.token.oauth2
`Validator.save_bearer_token`, the access token with its refresh token), the token exchange
(oauthflows.token.exchange, RFC 8693) and the ID-JAG grant (oauthflows.token.idjag, RFC 7523), both
through oauthflows.token.single; tests/tokens/test_one_token_writer.py fails on any other writer.
Each row records its lineage (`Lineage`: the grant family, the assertion's issuer, the token it was
exchanged from), so that ending a durable ancestor ends every descendant, whatever the grant
(oauthclients.models.AccessTokenQuerySet; SECURITY.md, "One service acting for a user at another").

The code exchange and the refresh are hot paths measured against a floor (`make bench`): the
writer is the two INSERTs they always made, lineage columns included, and no other statement
(tests/oauthflows/test_query_counts.py pins the counts).

And the end of a deactivated user's access (`user_access_end`, from tokens.signals): every code,
token and consent of theirs, audited per client.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import Count
from oauth2_provider.models import set_token_value

from oauthclients.audit import audit_record
from oauthclients.grants import GrantsEnded, grants_end
from oauthclients.models import AccessToken, AuditAction, Grant, OAuthClient, RefreshToken
from tokens.models import Consent


@dataclass(frozen=True)
class Lineage:
    """What a new access token descends from (AccessToken's lineage columns)."""

    # The refresh token family of the user's grant: a code's new family, a refresh's own, or the
    # family of the token an exchanged one comes from.
    family: uuid.UUID | None = None
    # The identity provider whose assertion (ID-JAG) granted the token or its ancestor.
    assertion_issuer: str = ""
    # RFC 8693: the token it was exchanged from (its row id), for the audit.
    exchanged_from: int | None = None

    @classmethod
    def of_exchange(cls, subject: AccessToken, *, family: uuid.UUID | None) -> "Lineage":
        """A token exchanged from `subject` carries its marks: the subject's family (its own, else
        `family`, its refresh token's, for a row from before access tokens recorded it) and issuer."""
        return cls(
            family=subject.token_family or family,
            assertion_issuer=subject.assertion_issuer,
            exchanged_from=subject.pk,
        )


def access_token_issue(
    *,
    value: str,
    user: AbstractBaseUser,
    client: OAuthClient,
    scope: str,
    expires: datetime,
    resource: list[str],
    lineage: Lineage,
    jwt_status: tuple[int, int] | None = None,
    act: dict | None = None,
    source_refresh_token: RefreshToken | None = None,
    refresh_value: str | None = None,
    auth_time: datetime | None = None,
) -> AccessToken:
    """Store a new access token (its digest, never the token) with its lineage and, given
    `refresh_value`, its refresh token in the same family; return the access token's row.

    `jwt_status` is a JWT's place in a status list (signing.statuslist); `act` an exchanged token's
    actor (RFC 8693 §4.1); `source_refresh_token` and `auth_time` a refresh's presented token and
    the login time the new refresh token carries on.
    """
    if refresh_value is not None and lineage.family is None:
        raise ValueError("A refresh token belongs to a family: the lineage names none.")
    status_list, status_index = jwt_status or (None, None)
    with transaction.atomic(savepoint=False):
        access = AccessToken(
            user=user,
            scope=scope,
            expires=expires,
            application=client,
            source_refresh_token=source_refresh_token,
            resource=list(resource),
            status_list=status_list,
            status_index=status_index,
            act=act,
            token_family=lineage.family,
            assertion_issuer=lineage.assertion_issuer,
            exchanged_from_id=lineage.exchanged_from,
        )
        set_token_value(access, value)
        access.save(force_insert=True)
        if refresh_value is not None:
            refresh = RefreshToken(
                user=user,
                application=client,
                access_token=access,
                token_family=lineage.family,
                resource=list(resource),
                auth_time=auth_time,
            )
            set_token_value(refresh, refresh_value)
            refresh.save(force_insert=True)
    return access


@transaction.atomic
def user_access_end(*, user, actor=None) -> GrantsEnded:
    """A deactivated user's codes, tokens and consents end at once, with every client (SECURITY.md).

    Reactivating the user brings none of them back: every app must ask again. One audit event per
    client that lost something, with the counts.
    """
    per_client: dict[int, dict[str, int]] = {}

    def tally(queryset, key: str) -> None:
        rows = queryset.values_list("application_id").annotate(n=Count("id")).values_list("application_id", "n")
        for client_id, count in rows:
            per_client.setdefault(client_id, {})[key] = count

    tally(RefreshToken.objects.filter(user=user, revoked__isnull=True), "revoked_refresh_tokens")
    tally(AccessToken.objects.filter(user=user), "revoked_access_tokens")
    tally(Grant.objects.filter(user=user, used_at__isnull=True), "revoked_codes")
    consent_clients = set(Consent.objects.filter(user=user).values_list("client_id", flat=True))
    ended = grants_end(user=user)
    for client in OAuthClient.objects.filter(pk__in=set(per_client) | consent_clients):
        audit_record(
            client=client, actor=actor, user=user, action=AuditAction.USER_DEACTIVATED, **per_client.get(client.pk, {})
        )
    return ended
