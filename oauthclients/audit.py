"""One way to record an audit event: a row, then (once committed) a signal and a JSON log line.

Never a credential in any of them: callers pass ids, names, statuses and secret hints only.
"""

import json
import logging

from django.db import transaction
from django.dispatch import Signal

from oauthclients.models import AuditAction, ClientAuditEvent, OAuthClient

# Sent after the transaction that wrote the event commits; receivers get `event`.
audit_event_recorded = Signal()

log = logging.getLogger("audit")


def _user_or_none(user):
    return user if getattr(user, "pk", None) else None


def audit_record(*, client: OAuthClient, actor, action: AuditAction, user=None, **detail) -> ClientAuditEvent:
    """Write the event in the caller's transaction; announce it when that transaction commits."""
    event = ClientAuditEvent.objects.create(
        client=client, actor=_user_or_none(actor), user=_user_or_none(user), action=action, detail=detail
    )
    audit_announce_on_commit(event)
    return event


def audit_announce_on_commit(event: ClientAuditEvent) -> None:
    """For an event row written by other means (a combined statement): announce it on commit."""
    transaction.on_commit(lambda: _announce(event))


def _announce(event: ClientAuditEvent) -> None:
    audit_event_recorded.send(sender=ClientAuditEvent, event=event)
    log.info(json.dumps(audit_log_fields(event), sort_keys=True, default=str))


def audit_log_fields(event: ClientAuditEvent) -> dict:
    return {
        "event": event.action,
        "at": event.created.isoformat(),
        "client_id": event.client.client_id,
        "actor_id": event.actor_id,
        "user_id": event.user_id,
        "detail": event.detail,
    }
