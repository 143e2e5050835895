"""The review: an approval bound to the digest of what the reviewer saw, a rejection with its reason
(every grant ends)."""

import hmac
from functools import partial

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from oauthclients.emails import review_email_send
from oauthclients.exceptions import InvalidTransition, ReviewOutdated
from oauthclients.grants import grants_end
from oauthclients.models import AuditAction, ClientStatus, OAuthClient
from oauthclients.services.fields import REASON_LABEL, _audit, _clean_text, _client_origins_sync, _lock

MAX_REJECTION_REASON_LENGTH = 2000


def _same_digest(given, actual: str) -> bool:
    # compare_digest refuses non-ASCII text; such input is simply not the digest.
    return isinstance(given, str) and given.isascii() and hmac.compare_digest(given, actual)


@transaction.atomic
def client_approve(*, client: OAuthClient, actor, expected_digest: str | None = None) -> OAuthClient:
    """pending or unverified -> approved. Only administrators call this. An unverified client's
    registered scopes beyond the ceiling become usable; its users' grants stay as they are.

    `expected_digest` is the `review_digest()` of the version the reviewer was shown: if the client
    changed since (its owner edited it meanwhile), nothing is approved. Every review screen passes
    it; only a caller that has just made or read the client in the same transaction may omit it.
    """
    client = _lock(client)
    if client.status not in (ClientStatus.PENDING, ClientStatus.UNVERIFIED):
        raise InvalidTransition(
            f"Only a pending or unverified client can be approved; this one is {client.get_status_display().lower()}."
            + (" The owner must edit and resubmit it first." if client.status == ClientStatus.REJECTED else "")
        )
    if expected_digest is not None and not _same_digest(expected_digest, client.review_digest()):
        raise ReviewOutdated(
            f"{client.name} ({client.client_id}) changed after you reviewed it, so it was not approved. "
            "Review the current version and approve again."
        )
    client.status = ClientStatus.APPROVED
    client.rejection_reason = ""
    client.reviewed_by = actor if getattr(actor, "pk", None) else None
    client.reviewed_at = timezone.now()
    client.approved_snapshot = client.presentation()
    # Users are served this copy of the logo until the next approval, whatever the owner uploads.
    client.approved_logo_png = client.logo_png
    client.save(
        update_fields=[
            "status",
            "rejection_reason",
            "reviewed_by",
            "reviewed_at",
            "approved_snapshot",
            "approved_logo_png",
            "updated",
        ]
    )
    _client_origins_sync(client)
    _audit(client=client, actor=actor, action=AuditAction.CLIENT_APPROVED)
    transaction.on_commit(partial(review_email_send, client_pk=client.pk))
    return client


@transaction.atomic
def client_reject(*, client: OAuthClient, actor, reason: str) -> OAuthClient:
    """pending, approved or unverified -> rejected, with a reason: every grant ends for good (tokens,
    codes, consent; oauthclients.grants.grants_end), and no approval brings them back."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": gettext("Give the owner a reason for the rejection.")})
    reason = _clean_text(
        reason, field="reason", label=REASON_LABEL, max_length=MAX_REJECTION_REASON_LENGTH, required=False
    )
    client = _lock(client)
    if client.status == ClientStatus.REJECTED:
        raise InvalidTransition(gettext("This client is already rejected."))
    previous = client.status
    # Rejection ends every grant, so neither a resubmitting edit nor a later approval brings old
    # tokens back: users must consent again.
    ended = grants_end(client=client)
    client.status = ClientStatus.REJECTED
    client.rejection_reason = reason
    client.reviewed_by = actor if getattr(actor, "pk", None) else None
    client.reviewed_at = timezone.now()
    client.save(update_fields=["status", "rejection_reason", "reviewed_by", "reviewed_at", "updated"])
    _client_origins_sync(client)
    _audit(
        client=client,
        actor=actor,
        action=AuditAction.CLIENT_REJECTED,
        reason=reason,
        previous=previous,
        revoked_access_tokens=ended.access_tokens,
        revoked_refresh_tokens=ended.refresh_tokens,
        revoked_codes=ended.codes,
    )
    transaction.on_commit(partial(review_email_send, client_pk=client.pk))
    return client
