"""The journeys in another language and in the other direction, as a person on a phone meets them:
the consent (reached from an app that sent ui_locales) and connected apps, developer settings (the
language chosen on the account's pages), and a passkey (the browser's Accept-Language): every page
in the language (<html lang>, dir), axe-clean, no horizontal scroll.

Arabic (right to left) and Japanese run once they are shipped (in settings.LANGUAGES; until then
each skips with "language not shipped", and nothing else makes them skip); German, shipped, runs
the consent journey at 1280 and 390 px.
"""

import re
from urllib.parse import urlencode, urlsplit

import pytest
from django.conf import settings
from django.utils.translation import get_language_info

from tests.browser.conftest import new_page
from tests.browser.test_journey import log_in
from tests.browser.test_journeys import VIEWPORTS, Audit, logo_file
from tests.browser.test_passkeys import add_passkey, virtual_authenticator
from tests.factories import make_client, make_user

pytestmark = pytest.mark.django_db(transaction=True)

# Right to left, and a script of its own with no spaces between words: the two that break layouts.
JOURNEY_LANGUAGES = ("ar", "ja")
PHONE = VIEWPORTS["phone"]
APP_NAME = "Team Planner"


def shipped(language: str) -> None:
    """Skip a language this server does not serve yet (the only reason these tests skip)."""
    if language not in dict(settings.LANGUAGES):
        pytest.skip(f"language not shipped: {language} is not in settings.LANGUAGES")


def direction(language: str) -> str:
    return "rtl" if get_language_info(language)["bidi"] else "ltr"


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


class Journey:
    """Each page: in the language, screenshot and axe (collected), no horizontal scroll."""

    def __init__(self, screenshots, language: str):
        self.audit = Audit(screenshots)
        self.language = language

    def __call__(self, page, name: str) -> None:
        assert page.get_attribute("html", "lang") == self.language, (name, page.url)
        assert page.get_attribute("html", "dir") == direction(self.language), (name, page.url)
        self.audit(page, f"{self.language}-{name}")
        assert no_horizontal_scroll(page), f"{name}: wider than the screen ({page.url})"

    def assert_clean(self) -> None:
        self.audit.assert_clean()


@pytest.fixture
def languages_cast(transactional_db, live_server):
    developer = make_user("developer")
    make_user("enduser")
    # The app's callback on this machine (http on localhost is allowed): the browser lands there.
    callback = live_server.url + "/team-planner/callback"
    client = make_client(developer, name=APP_NAME, approve=True, redirect_uris=[callback]).client
    return {"client_id": client.client_id, "redirect_uri": client.redirect_uri_list[0]}


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("language", ["de", *JOURNEY_LANGUAGES])
def test_the_consent_and_connected_apps_journey(languages_cast, live_server, chromium, screenshots, viewport, language):
    shipped(language)
    width, height = VIEWPORTS[viewport]
    base = live_server.url
    journey = Journey(screenshots, language)
    query = {
        "client_id": languages_cast["client_id"],
        "redirect_uri": languages_cast["redirect_uri"],
        "response_type": "code",
        "scope": "PROFILE_READ BOOKING_READ",
        "state": "s",
        "ui_locales": f"tlh {language}",  # an unsupported tag first: the first served one wins
    }
    page = new_page(chromium, width=width, height=height)
    page.goto(base + settings.OAUTH_AUTHORIZE_PATH + "?" + urlencode(query))
    journey(page, "login")
    log_in(page, "enduser")
    journey(page, "consent")
    page.locator("ul.resources summary").first.click()
    journey(page, "consent-details")
    with page.expect_navigation(url=re.compile(re.escape(languages_cast["redirect_uri"]) + r"\?")):
        page.click("main button[formaction*='/allow?']")
    # Pages outside the authorization follow the person: here, their choice on the account pages.
    page.goto(base + "/accounts/language/")
    assert page.get_attribute("html", "lang") == "en"  # the app's ui_locales ended with its request
    page.check(f"input[name=language][value={language}]")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    journey(page, "language-chosen")
    page.goto(base + "/settings/apps/")
    journey(page, "connected-apps")
    with page.expect_navigation():
        page.click(f"main a[href*='{languages_cast['client_id']}']")
    journey(page, "revoke-confirm")
    with page.expect_navigation():
        page.click("main button.danger[type=submit]")
    journey(page, "revoked")
    assert page.locator("main a[href*='/revoke']").count() == 0
    page.context.close()
    journey.assert_clean()


@pytest.mark.parametrize("language", JOURNEY_LANGUAGES)
def test_the_developer_settings_journey_at_phone_width(
    languages_cast, live_server, chromium, screenshots, tmp_path, language
):
    shipped(language)
    base = live_server.url
    journey = Journey(screenshots, language)
    logo = logo_file(tmp_path)
    page = new_page(chromium, width=PHONE[0], height=PHONE[1])
    page.goto(base + "/accounts/login/")
    log_in(page, "developer")
    page.goto(base + "/accounts/language/")
    page.check(f"input[name=language][value={language}]")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    journey(page, "language")
    page.goto(base + "/settings/developer/")
    journey(page, "client-list")
    with page.expect_navigation():
        page.click("main a.button[href$='/clients/new/']")
    journey(page, "register-form")
    page.fill("#id_name", "مخطط الفريق" if language == "ar" else "チームプランナー")  # typed in the language
    page.fill("#id_purpose", "Plans team schedules and books rooms.")
    page.fill("#id_website_url", "https://planner.example.com")
    page.set_input_files("#id_logo", logo)
    page.fill("#id_redirect_uris", "https://planner.example.com/callback")
    page.locator("details.scope-resource-box:has(fieldset[data-resource=BOOKING]) > summary").click()
    page.check("#id_scopes_BOOKING_READ")
    journey(page, "register-form-filled")
    with page.expect_navigation():
        page.locator("main form button[type=submit]").click()
    journey(page, "registered-secret-once")
    assert page.input_value("#new-secret").startswith("cs_")
    page.reload()
    journey(page, "client-page")
    page.locator("details.confirm summary").first.click()
    journey(page, "revoke-secret-confirm")
    page.goto(base + "/settings/developer/")
    journey(page, "client-list-one")
    page.goto(base + "/settings/developer/docs/integrating/")
    journey(page, "integration-guide")
    page.goto(base + "/settings/developer/clients/new/")
    # Nothing filled in, the browser's own checks off: the server's errors, every one, in the page.
    page.evaluate("document.querySelector('main form').noValidate = true")
    with page.expect_navigation():
        page.locator("main form button[type=submit]").click()
    journey(page, "register-form-errors")
    page.context.close()
    journey.assert_clean()


@pytest.fixture
def localhost_issuer(live_server, settings):
    # WebAuthn's relying party is the page's host name (tests/browser/test_passkeys.py).
    settings.OAUTH_ISSUER = live_server.url
    assert urlsplit(live_server.url).hostname == "localhost"
    return live_server.url


@pytest.mark.parametrize("language", JOURNEY_LANGUAGES)
def test_the_passkey_journey_at_phone_width(languages_cast, localhost_issuer, chromium, screenshots, language):
    shipped(language)
    base = localhost_issuer
    journey = Journey(screenshots, language)
    # The browser's language (Accept-Language), the person having chosen none.
    context = chromium.new_context(viewport={"width": PHONE[0], "height": PHONE[1]}, locale=language)
    page = context.new_page()
    page.set_default_timeout(10_000)
    virtual_authenticator(page)
    page.goto(base + "/accounts/login/")
    journey(page, "login")
    log_in(page, "enduser")
    page.goto(base + "/accounts/security/")
    journey(page, "sign-in-methods")
    page.goto(base + "/accounts/2fa/webauthn/add/")
    journey(page, "add-passkey")
    add_passkey(page, base, "هاتفي" if language == "ar" else "私の電話", passwordless=False)
    assert urlsplit(page.url).path == "/accounts/2fa/recovery-codes/", page.url
    journey(page, "recovery-codes")
    page.goto(base + "/accounts/2fa/webauthn/")
    journey(page, "passkeys")
    with page.expect_navigation():
        page.click("main a.danger-outline")
    journey(page, "remove-passkey-confirm")
    page.goto(base + "/accounts/security/")
    journey(page, "sign-in-methods-with-passkey")
    context.close()
    journey.assert_clean()
