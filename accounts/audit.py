"""Account events on the audit trail: a row in the caller's transaction, a JSON log line on commit.

The same "audit" logger as the clients' trail (oauthclients/audit.py); never a credential: ids,
names, types and domains only.
"""

import json
import logging

from django.db import transaction

from accounts.models import AccountAuditAction, AccountAuditEvent

log = logging.getLogger("audit")


def _user_or_none(user):
    return user if getattr(user, "pk", None) else None


def account_audit_record(*, actor, action: AccountAuditAction, user=None, **detail) -> AccountAuditEvent:
    """Write the event in the caller's transaction; log it when that transaction commits."""
    event = AccountAuditEvent.objects.create(
        actor=_user_or_none(actor), user=_user_or_none(user), action=action, detail=detail
    )
    fields = {
        "event": event.action,
        "at": event.created.isoformat(),
        "actor_id": event.actor_id,
        "user_id": event.user_id,
    }
    transaction.on_commit(lambda: log.info(json.dumps({**fields, "detail": detail}, sort_keys=True, default=str)))
    return event
