"""Mail to a client's owner when an administrator reviews it. Never contains a secret."""

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.mail import send_mail

from oauthclients.models import ClientStatus, OAuthClient

log = logging.getLogger(__name__)


# The client_ids whose review mail failed, while a caller (an admin action, a command) listens.
_failures: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("review_email_failures", default=None)


@contextmanager
def review_email_failures() -> Iterator[list[str]]:
    """Collect the client_ids whose review mail could not be sent in this block (to warn the reviewer)."""
    failed: list[str] = []
    token = _failures.set(failed)
    try:
        yield failed
    finally:
        _failures.reset(token)


def review_email_send(*, client_pk: int) -> None:
    """Tell the owner their client was approved or rejected (with the reason). Runs after commit."""
    client = OAuthClient.objects.select_related("user").filter(pk=client_pk).first()
    if client is None or not client.user.email or client.status == ClientStatus.PENDING:
        return
    page = settings.OAUTH_ISSUER + client.get_absolute_url()
    if client.status == ClientStatus.APPROVED:
        subject = f"Your OAuth client “{client.name}” was approved"
        body = (
            f"Hello {client.user.get_username()},\n\n"
            f"Your OAuth client “{client.name}” (client ID {client.client_id}) has been approved. "
            "Any user of the scheduling service can now authorize it.\n\n"
            f"Client settings: {page}\n"
        )
    else:
        subject = f"Your OAuth client “{client.name}” was rejected"
        body = (
            f"Hello {client.user.get_username()},\n\n"
            f"Your OAuth client “{client.name}” (client ID {client.client_id}) was not approved.\n\n"
            f"Reason given by the reviewer:\n{client.rejection_reason}\n\n"
            f"You can change the client and submit it again: {page}\n"
        )
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [client.user.email])
    except Exception:
        # The review is done and committed: no mail failure (server down, a header refused by
        # Django's injection check, a backend bug) may turn it into an error or stop a batch.
        log.warning("Could not send the review email for client %s", client.client_id, exc_info=True)
        failures = _failures.get()
        if failures is not None:
            failures.append(client.client_id)
