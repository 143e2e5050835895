"""German end to end: the consent page, the login page and the password-reset email, each against
its English self: the English sentences gone, what the developer typed unchanged."""

import re
from urllib.parse import urlencode

import pytest
from django.core import mail
from django.test import Client

from tests.oauthflows.helpers import authorize_url


def text(html: str) -> str:
    """What a person reads: the page without its markup, whitespace collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", body).split())


CONSENT_SENTENCES = [
    "wants to access your scheduling account",
    "Not you? Switch account",
    "Approved by this service's administrators",
    "It will be able to:",
    "View your profile",
    "After you choose, you will be sent back to",
    "You can revoke access at any time in",
    "Allow",
    "Deny",
]


def test_the_consent_page_is_german(browser, approved_client):
    url = authorize_url(approved_client, prompt="consent", scope="PROFILE_READ BOOKING_READ")
    english = text(browser.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode())
    german = text(browser.get(url, HTTP_ACCEPT_LANGUAGE="de").content.decode())
    for sentence in CONSENT_SENTENCES:
        assert sentence in english, sentence
        assert sentence not in german, sentence
    for words in ("möchte auf Ihr Terminplanungskonto zugreifen", "Erlauben", "Ablehnen", "Ihr Profil ansehen"):
        assert words in german
    # What the developer typed, and the service's name, as they are.
    for typed in ("Calendar Sync", "Syncs bookings to your calendar.", "https://calendar-sync.example.com"):
        assert typed in english and typed in german
    assert "Scheduling API" in german


def test_the_login_page_is_german(client, approved_client):
    url = "/accounts/login/?" + urlencode({"next": authorize_url(approved_client)})
    english = text(client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode())
    german = text(client.get(url, HTTP_ACCEPT_LANGUAGE="de").content.decode())
    for sentence in ("Log in to continue to", "Username or email", "Forgot your password?", "Log in with a passkey"):
        assert sentence in english and sentence not in german, sentence
    assert "Melden Sie sich an, um mit Calendar Sync fortzufahren" in german
    assert "Calendar Sync is asking for access" in english


@pytest.mark.parametrize(
    ("language", "expected", "absent"), [("de", "Passwort", "Password Reset"), ("en", "Password Reset", "Passwort")]
)
def test_the_password_reset_email_is_in_the_language_of_the_page_it_was_asked_from(
    end_user, language, expected, absent
):
    page = Client()
    response = page.post("/accounts/password/reset/", {"email": end_user.email}, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 302
    (message,) = mail.outbox
    assert expected in message.subject and absent not in message.subject
    if language == "de":
        assert (
            "You're receiving this email" not in message.body and "Du erhältst diese E-Mail" in message.body
        )  # allauth's words, as it ships them
    else:
        assert "You're receiving this email" in message.body


def test_the_reset_email_follows_the_persons_choice_over_nothing(end_user):
    """Asked from a page in German (the person's choice travels with their browser's session only
    when signed in; signed out, the page's language is the browser's)."""
    page = Client()
    page.post("/accounts/password/reset/", {"email": end_user.email}, HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")
    (message,) = mail.outbox
    assert "Passwort" in message.subject
