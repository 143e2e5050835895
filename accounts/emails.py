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
it says that the mail could not be sent and how to have it sent again (docs/accounts.md): from
Email addresses when signed in; by signing in when not (a self sign-up signs in only once it has
proved its address, accounts.stages, and until then each sign-in sends a new confirmation, at
most one every few minutes). A password reset's page stays the same either way: it says nothing
about which addresses have accounts.
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
# The mails allauth sends under its limit of one verification mail per address every few minutes
# (account/internal/flows/email_verification.py, send_verification_email_to_address): the
# confirmation itself, and in its place, to keep sign-up from telling addresses apart, "an account
# already exists" or "no account with this address".
_UNDER_VERIFICATION_LIMIT = (
    "account/email/email_confirmation",
    "account/email/account_already_exists",
    "account/email/unknown_account",
)
# Whether the last verification mail of a signed-out sign-up or sign-in failed: the "verification
# sent" page (accounts.views.EmailVerificationSentView) is the next request, after a redirect.
VERIFICATION_FAILED_SESSION_KEY = "accounts_verification_mail_failed"


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
            if template_prefix.startswith(_UNDER_VERIFICATION_LIMIT):
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
    the way to send it again (the Email addresses page; signing in when signed out)."""
    failed = gettext("The confirmation email to %(email)s could not be sent. Your account and the address are saved.")
    if getattr(request, "user", None) is not None and request.user.is_authenticated:
        link, words = reverse("account_email"), gettext("Send it again from Email addresses.")
    else:
        # A sign-up (or a sign-in of an account still to prove its address): nobody is signed in,
        # and the Email addresses page would only ask to sign in. Signing in sends it again.
        link, words = reverse("account_login"), gettext("Sign in to have it sent again.")
    messages.warning(request, format_html('{} <a href="{}">{}</a>', failed % {"email": email}, link, words))


def verification_outcome_remember(request) -> None:
    """Before the redirect to the "verification sent" page: whether this request's mail failed,
    for that page to say so (accounts.views.EmailVerificationSentView)."""
    request.session[VERIFICATION_FAILED_SESSION_KEY] = bool(getattr(request, _FAILED_ATTRIBUTE, None))


def verification_outcome_failed(request) -> bool:
    """Whether the last verification mail this browser's sign-up or sign-in asked for failed."""
    return bool(request.session.get(VERIFICATION_FAILED_SESSION_KEY))
