"""Each shipped language end to end (every one in settings.LANGUAGES but English, so a language
switched on is covered with nothing to add here): the consent page, the login page and the
password-reset email, each against its English self. The English sentences are gone; what the
developer typed (the app's name, purpose, website) and the service's name are unchanged; the page
says its language in <html lang> and its direction in dir (right to left for Arabic)."""

import re
from urllib.parse import urlencode

import pytest
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.utils.translation import get_language_info

from tests.i18n.catalogues import shipped_languages
from tests.oauthflows.helpers import authorize_url

# The scripts written right to left; every other shipped language is left to right.
RIGHT_TO_LEFT = {"ar", "fa", "he", "ur"}

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
LOGIN_SENTENCES = ["Log in to continue to", "Username or email", "Forgot your password?", "Log in with a passkey"]
# allauth's words, as it ships them.
RESET_SUBJECT = "Password Reset"
RESET_BODY = "You're receiving this email"
# What the developer typed (tests/factories.py), shown exactly as typed in every language.
TYPED = ("Calendar Sync", "Syncs bookings to your calendar.", "https://calendar-sync.example.com")

# Words each language must show, beyond the English being gone: German's, checked by a German reader.
EXPECTED_WORDS = {
    "de": {
        "consent": ["möchte auf Ihr Terminplanungskonto zugreifen", "Erlauben", "Ablehnen", "Ihr Profil ansehen"],
        "login": ["Melden Sie sich an, um mit Calendar Sync fortzufahren"],
        "reset_subject": ["Passwort"],
        "reset_body": ["Du erhältst diese E-Mail"],
    },
}

LANGUAGES = shipped_languages()


def text(html: str) -> str:
    """What a person reads: the page without its markup, whitespace collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", body).split())


def html_tag(html: str) -> str:
    return re.search(r"<html\b[^>]*>", html)[0]


def assert_page_speaks(html: str, language: str) -> None:
    """<html lang> is the language, dir its direction (Django's language data agrees)."""
    tag = html_tag(html)
    direction = "rtl" if language.split("-")[0] in RIGHT_TO_LEFT else "ltr"
    assert get_language_info(language)["bidi"] is (direction == "rtl")
    assert f'lang="{language}"' in tag, tag
    assert f'dir="{direction}"' in tag, tag


def expected(language: str, part: str) -> list[str]:
    return EXPECTED_WORDS.get(language, {}).get(part, [])


def test_every_language_of_settings_is_covered_here():
    """The parametrised tests below run for every language switched on: German today."""
    assert "de" in LANGUAGES and "en" not in LANGUAGES


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_consent_page_is_in_the_language(browser, approved_client, language):
    url = authorize_url(approved_client, prompt="consent", scope="PROFILE_READ BOOKING_READ")
    english_html = browser.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    html = browser.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    english, page = text(english_html), text(html)
    assert_page_speaks(english_html, "en")
    assert_page_speaks(html, language)
    for sentence in CONSENT_SENTENCES:
        assert sentence in english, sentence
        assert sentence not in page, sentence
    for words in expected(language, "consent"):
        assert words in page
    for typed in TYPED:
        assert typed in english and typed in page, typed
    assert "Scheduling API" in page


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_consent_page_follows_ui_locales(browser, approved_client, language):
    """The app's ui_locales, an unsupported tag first, gives the same page as the browser's language."""
    url = authorize_url(approved_client, prompt="consent", scope="PROFILE_READ", ui_locales=f"tlh {language}")
    html = browser.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert_page_speaks(html, language)
    assert "wants to access your scheduling account" not in text(html)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_login_page_is_in_the_language(client, approved_client, language):
    url = "/accounts/login/?" + urlencode({"next": authorize_url(approved_client)})
    english_html = client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    html = client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    english, page = text(english_html), text(html)
    assert_page_speaks(html, language)
    for sentence in LOGIN_SENTENCES:
        assert sentence in english and sentence not in page, sentence
    assert "Calendar Sync is asking for access" in english
    assert "Calendar Sync" in page and "Scheduling API" in page
    for words in expected(language, "login"):
        assert words in page


def _reset_email(end_user, accept_language: str):
    # allauth limits reset requests per address and per email (5 a minute) in the in-process cache,
    # and these tests ask for one per language from the same address and email: each starts from none.
    cache.clear()
    response = Client().post(
        "/accounts/password/reset/", {"email": end_user.email}, HTTP_ACCEPT_LANGUAGE=accept_language
    )
    assert response.status_code == 302
    (message,) = mail.outbox
    return message


def test_the_password_reset_email_is_english_from_an_english_page(end_user):
    message = _reset_email(end_user, "en")
    assert RESET_SUBJECT in message.subject and RESET_BODY in message.body


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_password_reset_email_is_in_the_language_of_the_page_it_was_asked_from(end_user, language):
    message = _reset_email(end_user, language)
    assert RESET_SUBJECT not in message.subject and RESET_BODY not in message.body
    for words in expected(language, "reset_subject"):
        assert words in message.subject
    for words in expected(language, "reset_body"):
        assert words in message.body


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_regional_accept_language_gets_the_language(end_user, language):
    """Signed out, the page's language is the browser's, a regional tag served by its language."""
    regional = {"de": "de-DE,de;q=0.9", "pt-br": "pt-BR", "zh-hans": "zh-CN"}.get(language, f"{language};q=0.9")
    message = _reset_email(end_user, regional)
    assert RESET_SUBJECT not in message.subject
    for words in expected(language, "reset_subject"):
        assert words in message.subject
