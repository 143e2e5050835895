"""Mail to a client's owner when an administrator reviews it. Never contains a secret."""

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.core.mail import send_mail
from django.utils import translation
from django.utils.translation import gettext

from oauthclients.models import ClientStatus, OAuthClient
from plumbing.languages import supported_language

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
    client = OAuthClient.objects.select_related("user", "user__profile").filter(pk=client_pk).first()
    if client is None or not client.user.email or client.status == ClientStatus.PENDING:
        return
    # No page asked for this mail: it speaks the owner's own language, else English.
    with translation.override(_recipient_language(client.user)):
        subject, body = _review_email(client)
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [client.user.email])
    except Exception:
        # The review is done and committed: no mail failure (server down, a header refused by
        # Django's injection check, a backend bug) may turn it into an error or stop a batch.
        log.warning("Could not send the review email for client %s", client.client_id, exc_info=True)
        failures = _failures.get()
        if failures is not None:
            failures.append(client.client_id)


def _recipient_language(user) -> str:
    """The language the person chose for our pages and mail (profiles.Profile.interface_language,
    read through the relation: oauthclients and profiles import nothing of each other), else English."""
    try:
        chosen = user.profile.interface_language
    except ObjectDoesNotExist:
        chosen = ""
    return supported_language(chosen) or settings.LANGUAGE_CODE


def _review_email(client: OAuthClient) -> tuple[str, str]:
    """The subject and body telling the owner how the review went, in the active language."""
    page = settings.OAUTH_ISSUER + client.get_absolute_url()
    values = {
        "name": client.name,
        "username": client.user.get_username(),
        "client_id": client.client_id,
        "page": page,
        "reason": client.rejection_reason,
    }
    if client.status == ClientStatus.APPROVED:
        subject = gettext("Your OAuth client “%(name)s” was approved") % values
        body = (
            gettext(
                "Hello %(username)s,\n\n"
                "Your OAuth client “%(name)s” (client ID %(client_id)s) has been approved. "
                "Any user of the scheduling service can now authorize it.\n\n"
                "Client settings: %(page)s\n"
            )
            % values
        )
    else:
        subject = gettext("Your OAuth client “%(name)s” was rejected") % values
        body = (
            gettext(
                "Hello %(username)s,\n\n"
                "Your OAuth client “%(name)s” (client ID %(client_id)s) was not approved.\n\n"
                "Reason given by the reviewer:\n%(reason)s\n\n"
                "You can change the client and submit it again: %(page)s\n"
            )
            % values
        )
    return subject, body
