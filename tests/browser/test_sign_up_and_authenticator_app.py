"""A newcomer's first hour on a phone (390 px) and a desktop (1280 px), in Chromium, axe on every page:

- the login page says "Continue with NAME" for an identity provider;
- sign-up's fields look alike (the email field was unstyled);
- right after signing up (and following the mailed link), "Set up an authenticator app" opens
  without asking for the password again: a sign-up is a fresh sign-in;
- the QR code is rendered within the site's Content-Security-Policy (no violation reported: the
  detector is shown to catch one), the secret fits the width and copies, the otpauth:// link is
  there, and the app is turned on with its code;
- that code, typed again at the next sign-in within its 30 s, is said to be used already.
"""

from io import BytesIO
from urllib.parse import urlsplit

import pyotp
import pytest
from PIL import Image

from tests.browser.conftest import in_thread, new_page
from tests.browser.test_account_pages import _confirm_link
from tests.browser.test_journeys import VIEWPORTS, Audit
from tests.browser.test_passkeys import log_out

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a-newcomers-passphrase-93"

# Every Content-Security-Policy violation the page reports, kept where the test can read it.
RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.cspViolations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


@pytest.fixture
def open_sign_up(people, live_server, settings):
    from django.core.cache import cache

    from accounts.services import identity_provider_add

    cache.clear()  # allauth's limit of one verification mail per address per 3 minutes starts over
    settings.OAUTH_ISSUER = live_server.url
    settings.OAUTH_SIGNUP = "open"
    identity_provider_add(
        name="Acme SSO",
        issuer="https://sso.acme.example",
        client_id="x",
        client_secret="y" * 20,
        domains=[],
        enforce=False,
    )
    return live_server.url


def violations(page, console: list[str]) -> list[str]:
    return page.evaluate("window.cspViolations") + [line for line in console if "Content Security Policy" in line]


def field_look(page, selector: str) -> dict:
    return page.locator(selector).evaluate(
        """field => { const s = getComputedStyle(field), box = field.getBoundingClientRect();
        return {width: Math.round(box.width), height: Math.round(box.height), border: s.borderTopColor,
                borderWidth: s.borderTopWidth, radius: s.borderTopLeftRadius, padding: s.paddingLeft,
                font: s.fontSize}; }"""
    )


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_sign_up_then_an_authenticator_app_on_a_phone_and_a_desktop(open_sign_up, chromium, screenshots, viewport):
    base = open_sign_up
    width, height = VIEWPORTS[viewport]
    audit = Audit(screenshots)
    page = new_page(chromium, width=width, height=height)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page.add_init_script(RECORD_VIOLATIONS)
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))

    # The login page names the provider the way the docs do.
    page.goto(base + "/accounts/login/")
    assert page.get_by_role("link", name="Continue with Acme SSO", exact=True).is_visible()
    assert "Or use a third-party" not in page.content()
    audit(page, "login")

    # Sign-up: every field alike, the email one included.
    page.goto(base + "/accounts/signup/")
    audit(page, "sign-up")
    assert field_look(page, "#id_email") == field_look(page, "#id_username") == field_look(page, "#id_password1")
    page.fill("#id_email", f"newbie-{viewport}@example.com")
    page.fill("#id_username", f"newbie-{viewport}")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    with page.expect_navigation():
        page.click("main button[type=submit]")
    # The mailed link (allauth sets up no second factor on an address nobody proved).
    page.goto(base + in_thread(lambda: _confirm_link(base)))
    with page.expect_navigation():
        page.click("main button[type=submit]")

    # Seconds after signing up: the set-up opens, no password asked again.
    page.goto(base + "/accounts/2fa/totp/activate/")
    assert urlsplit(page.url).path == "/accounts/2fa/totp/activate/", page.url
    audit(page, "authenticator-app")
    qr = page.locator("svg.totp-qr")
    assert qr.is_visible()
    box = qr.bounding_box()
    assert box["width"] >= 200 and box["height"] >= 200 and box["x"] >= 0 and box["x"] + box["width"] <= width
    levels = Image.open(BytesIO(qr.screenshot())).convert("L").histogram()  # pixels per grey level
    dark = sum(levels[:64]) / sum(levels)
    assert 0.2 < dark < 0.8, dark  # drawn: black modules on white, not a broken image
    assert not violations(page, console), violations(page, console)

    secret = page.locator("#authenticator_secret")
    secret_text = secret.inner_text().strip()
    assert len(secret_text) == 32
    assert secret.evaluate("e => e.scrollWidth <= e.clientWidth && e.getBoundingClientRect().right <= innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    page.get_by_role("button", name="Copy secret").click()
    assert page.evaluate("navigator.clipboard.readText()") == secret_text
    link = page.locator("#totp_link").get_attribute("href")
    assert link.startswith("otpauth://totp/") and f"secret={secret_text}" in link

    # The detector works: an image the policy forbids is reported.
    page.evaluate("""() => { const img = new Image(); img.src = "data:image/svg+xml;base64,PHN2Zy8+";
                             document.body.appendChild(img); }""")
    page.wait_for_function("window.cspViolations.length > 0")
    assert any("data" in line for line in violations(page, console))

    code = pyotp.TOTP(secret_text).now()
    page.fill("#id_code", code)
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert urlsplit(page.url).path == "/accounts/2fa/recovery-codes/", page.url

    # The same code at the next sign-in, within its period: said to be used, not "incorrect".
    log_out(page, base)
    page.goto(base + "/accounts/login/")
    page.fill("#id_login", f"newbie-{viewport}")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert urlsplit(page.url).path == "/accounts/2fa/authenticate/", page.url
    page.fill("#id_code", code)
    with page.expect_navigation():
        page.click("main button[type=submit]")
    said = page.locator("#code-errors").inner_text()
    assert "already used" in said and "Incorrect" not in said, said
    audit(page, "code-already-used")
    audit.assert_clean()
