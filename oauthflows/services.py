"""State changes of a user's grants: consent given or refused, access revoked."""

from django.db import transaction
from django.utils import timezone

from oauthclients.audit import audit_record
from oauthclients.models import AccessToken, AuditAction, Consent, Grant, OAuthClient, RefreshToken


@transaction.atomic
def consent_record(*, user, client: OAuthClient, scopes: list[str]) -> Consent:
    """The user clicked Allow: remember the standing authorization and audit it."""
    now = timezone.now()
    # One statement, new or not (INSERT ... ON CONFLICT DO UPDATE): first_authorized_at is kept.
    (consent,) = Consent.objects.bulk_create(
        [Consent(user=user, client=client, first_authorized_at=now, last_authorized_at=now)],
        update_conflicts=True,
        unique_fields=["user", "client"],
        update_fields=["last_authorized_at"],
    )
    audit_record(
        client=client,
        actor=user,
        user=user,
        action=AuditAction.GRANT_AUTHORIZED,
        scopes=scopes,
        unrestricted=not scopes,
    )
    return consent


@transaction.atomic
def consent_deny(*, user, client: OAuthClient) -> None:
    audit_record(client=client, actor=user, user=user, action=AuditAction.GRANT_DENIED)


@transaction.atomic
def connected_app_revoke(*, user, client: OAuthClient) -> int:
    """Kill every token this client holds for this user, at once; returns how many families died."""
    now = timezone.now()
    families = RefreshToken.objects.filter(user=user, application=client, revoked__isnull=True).update(
        revoked=now, access_token=None, updated=now
    )
    AccessToken.objects.filter(user=user, application=client).delete()
    # Codes issued but not yet exchanged must not become tokens afterwards.
    Grant.objects.filter(user=user, application=client, used_at__isnull=True).update(used_at=now, token_family=None)
    Consent.objects.filter(user=user, client=client).delete()
    audit_record(client=client, actor=user, user=user, action=AuditAction.ACCESS_REVOKED, token_families=families)
    return families
