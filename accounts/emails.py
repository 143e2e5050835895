"""The mail allauth sends for us (password reset, email confirmation, notifications): what its links
point at, and what a page says when the mail server refuses it. Called by accounts.adapter.

Links come from OAUTH_ISSUER, never from the request (SECURITY.md, "Accounts and the login"): a
`Host` header such as `127.0.0.1:6666` passes ALLOWED_HOSTS (ports are not compared), and allauth
builds its links with `request.build_absolute_uri()`, so a reset link would point wherever the
requester's Host said. Every `*_url` allauth hands a mail template, and the site the template
names (`current_site`: the greeting, the footer, the subject's prefix), is rebuilt on the issuer.

A mail that cannot be sent (a server down, `EMAIL_USE_TLS=1` against one without STARTTLS, a
refused recipient) never turns the page into a 500 with the account half made: the account, the
address and the request stand, the failure is logged, and where the page would have said "sent"
it says that the mail could not be sent and where to send it again (docs/accounts.md). A password
reset's page stays the same either way: it says nothing about which addresses have accounts.
"""

import logging
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from allauth.account import app_settings as account_settings
from allauth.core import ratelimit
from django.conf import settings
from django.contrib import messages
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext

log = logging.getLogger(__name__)

# allauth's "Confirmation email sent to ..." (account/internal/flows/email_verification.py), added
# after every verification mail: at sign-up, on "Re-send verification", on adding an address.
VERIFICATION_SENT_MESSAGE = "account/messages/email_confirmation_sent.txt"
_FAILED_ATTRIBUTE = "_accounts_mail_failed_to"


@dataclass(frozen=True)
class IssuerSite:
    """What allauth's templates read as `current_site`, from OAUTH_ISSUER instead of the Host header."""

    domain: str
    name: str


def issuer_site() -> IssuerSite:
    host = urlsplit(settings.OAUTH_ISSUER).netloc
    return IssuerSite(domain=host, name=host)


def issuer_url(url: str) -> str:
    """`url` (absolute, or a path) with the issuer's scheme and host, whatever built it."""
    issuer = urlsplit(settings.OAUTH_ISSUER)
    parts = urlsplit(url)
    return urlunsplit((issuer.scheme, issuer.netloc, issuer.path.rstrip("/") + parts.path, parts.query, parts.fragment))


def mail_context(context: dict) -> dict:
    """allauth's template context for a mail, its links and site rebuilt on the issuer."""
    links = {
        key: issuer_url(value) for key, value in context.items() if key.endswith("_url") and isinstance(value, str)
    }
    return {**context, **links, "current_site": issuer_site()}


def mail_subject(subject: str) -> str:
    """allauth's subject prefix ("[site] "), naming the issuer's host."""
    prefix = account_settings.EMAIL_SUBJECT_PREFIX
    if prefix is None:
        prefix = f"[{issuer_site().name}] "
    return prefix + subject


def mail_send(message, *, request, template_prefix: str, email: str) -> bool:
    """Send `message`; on any failure of the mail server or backend, log it, note it on the request
    (for the page: mail_failed) and return False instead of raising."""
    try:
        message.send()
    except Exception as error:  # whatever the backend raises: the mail is lost, the request is not
        # The template's name and the error, never the message: it holds the link's key.
        log.warning("Could not send the %s email: %s: %s", template_prefix, type(error).__name__, error)
        if request is not None:
            failed = getattr(request, _FAILED_ATTRIBUTE, None) or set()
            failed.add(email.lower())
            setattr(request, _FAILED_ATTRIBUTE, failed)
            if "email_confirmation" in template_prefix:
                # Nothing was sent: the next "send it again" must not wait out allauth's limit of
                # one verification mail per address every few minutes.
                ratelimit.clear(request, action="confirm_email", key=email.lower())
        return False
    return True


def mail_failed(*, request, email: str | None) -> bool:
    """Whether a mail to `email` failed in this request."""
    return bool(email) and email.lower() in (getattr(request, _FAILED_ATTRIBUTE, None) or ())


def verification_failure_message_add(*, request, email: str) -> None:
    """In place of "Confirmation email sent": it was not, the account and the address are kept, and
    the way to send it again (the Email addresses page; through sign-in when signed out)."""
    messages.warning(
        request,
        format_html(
            '{} <a href="{}">{}</a>',
            gettext("The confirmation email to %(email)s could not be sent. Your account and the address are saved.")
            % {"email": email},
            reverse("account_email"),
            gettext("Send it again from Email addresses."),
        ),
    )
