"""Mail to a client's owner when an administrator reviews it. Never contains a secret."""

import logging

from django.conf import settings
from django.core.mail import send_mail

from oauthclients.models import ClientStatus, OAuthClient

log = logging.getLogger(__name__)


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
    except OSError:
        # The review is done and committed; a mail server hiccup must not turn it into an error.
        log.warning("Could not send the review email for client %s", client.client_id, exc_info=True)
