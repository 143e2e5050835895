"""Passkeys (WebAuthn) in a real Chromium, with Chrome's virtual authenticator standing in for the device.

The authenticator is Chromium's own (DevTools protocol: WebAuthn.enable, addVirtualAuthenticator;
CTAP2, internal transport, resident keys, user verification that always succeeds), so the
browser's WebAuthn checks run for real: the relying party id must be the page's host, which is
OAUTH_ISSUER's (http only because it is localhost). allauth's fido2 server checks the
signatures, the challenge and the relying party's hash.

- a passkey registered as a second factor, then asked for after the password;
- a passkey registered for passwordless sign-in, then used alone from the login page;
- a staff account sent to set up a second factor before the admin, enrolling a passkey on a
  390 px wide page (its recovery codes next, the admin then open: the registration proved it),
  every page axe-clean, and confirming with it;
- a ceremony the browser stops is said on the page, with the browser's error (the page opened at
  127.0.0.1, an IP address, which cannot be a relying party: `make run`'s old address).

The passkey on the address `make run` prints, through `make run` itself: test_make_run_passkey.py.
"""

from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import new_page
from tests.browser.test_journey import log_in
from tests.browser.test_journeys import Audit

pytestmark = pytest.mark.django_db(transaction=True)


def virtual_authenticator(page) -> tuple[object, str]:
    """Chromium's virtual platform authenticator on `page` (a passkey store with user verification)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return cdp, added["authenticatorId"]


def credentials(cdp, authenticator_id: str) -> list[dict]:
    return cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator_id})["credentials"]


@pytest.fixture
def localhost_issuer(live_server, settings):
    # WebAuthn's relying party id is a host name (never an IP address) and must be the page's:
    # the issuer is the live server's http://localhost:PORT, as a developer's would be.
    settings.OAUTH_ISSUER = live_server.url
    assert urlsplit(live_server.url).hostname == "localhost"
    return live_server.url


def add_passkey(page, base: str, name: str, *, passwordless: bool) -> None:
    page.goto(base + "/accounts/2fa/webauthn/add/")
    assert urlsplit(page.url).path == "/accounts/2fa/webauthn/add/", page.url
    page.fill("#id_name", name)
    # A sign-in passkey unless unticked (accounts.forms.AddWebAuthnForm).
    assert page.is_checked("#id_passwordless")
    if not passwordless:
        page.uncheck("#id_passwordless")
    with page.expect_navigation():
        page.click("#mfa_webauthn_add")


def log_out(page, base: str) -> None:
    page.goto(base + "/accounts/logout/")
    with page.expect_navigation():
        page.click("main button[type=submit]")


def test_passkey_as_second_factor_then_passwordless(people, localhost_issuer, chromium):
    base = localhost_issuer
    page = new_page(chromium)
    cdp, authenticator = virtual_authenticator(page)

    # Registration as a second factor, after a password sign-in.
    page.goto(base + "/accounts/login/")
    log_in(page, "enduser")
    add_passkey(page, base, "Work laptop", passwordless=False)
    # The first factor: its recovery codes next, shown at once (registering the passkey proved it).
    assert urlsplit(page.url).path == "/accounts/2fa/recovery-codes/", page.url
    assert page.locator("#recovery_codes").input_value().strip()
    stored = credentials(cdp, authenticator)
    assert len(stored) == 1 and stored[0]["rpId"] == "localhost"
    assert stored[0]["isResidentCredential"] is False  # a second factor: no discoverable credential
    page.goto(base + "/accounts/security/")
    assert "Work laptop" in page.content()

    # Login with it as the second factor: the password alone is not enough.
    log_out(page, base)
    page.goto(base + "/accounts/login/")
    log_in(page, "enduser")
    assert urlsplit(page.url).path == "/accounts/2fa/authenticate/", page.url
    with page.expect_navigation():
        page.click("#mfa_webauthn_authenticate")
    assert urlsplit(page.url).path == "/settings/apps/", page.url
    assert credentials(cdp, authenticator)[0]["signCount"] >= 1

    # A second passkey, on another device, for passwordless sign-in (a discoverable credential,
    # user verification). Another device: WebAuthn refuses to register a second credential on an
    # authenticator that already holds one of this account's (excludeCredentials).
    cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": authenticator})
    cdp, authenticator = virtual_authenticator(page)
    add_passkey(page, base, "Phone", passwordless=True)
    resident = [c for c in credentials(cdp, authenticator) if c["isResidentCredential"]]
    assert len(resident) == 1

    # Passwordless: from the login page, the passkey alone.
    log_out(page, base)
    page.goto(base + "/accounts/login/")
    with page.expect_navigation():
        page.click("#passkey_login")
    assert urlsplit(page.url).path == "/settings/apps/", page.url
    assert "enduser" in page.content()


def test_without_a_passkey_the_passkey_login_signs_nobody_in(people, localhost_issuer, chromium):
    # The failure side: an authenticator with no credential for this site cannot sign anyone in,
    # and the page says the browser stopped (not a button that seems to do nothing).
    base = localhost_issuer
    page = new_page(chromium)
    virtual_authenticator(page)
    page.goto(base + "/accounts/login/")
    page.click("#passkey_login")
    said = page.locator(".messages .passkey-error")
    said.wait_for()
    assert "NotAllowedError" in said.inner_text() and "no passkey for this site" in said.inner_text()
    assert urlsplit(page.url).path == "/accounts/login/"
    page.goto(base + "/settings/apps/")
    assert urlsplit(page.url).path == "/accounts/login/"


def test_on_an_ip_address_the_page_says_why_no_passkey_is_added(people, localhost_issuer, chromium):
    # make run's old address: the issuer is localhost, the page is opened at 127.0.0.1. Chromium
    # refuses the ceremony (an IP address is no relying party); the page says so, with its error.
    at_ip = localhost_issuer.replace("//localhost:", "//127.0.0.1:")
    page = new_page(chromium)
    cdp, authenticator = virtual_authenticator(page)
    page.goto(at_ip + "/accounts/login/")
    log_in(page, "enduser")
    page.goto(at_ip + "/accounts/2fa/webauthn/add/")
    assert urlsplit(page.url).path == "/accounts/2fa/webauthn/add/", page.url
    page.click("#mfa_webauthn_add")
    said = page.locator(".messages .passkey-error")
    said.wait_for()
    text = said.inner_text()
    assert "SecurityError" in text and "never on an IP address" in text, text
    assert page.locator(".messages").get_attribute("role") == "status"  # announced
    assert urlsplit(page.url).path == "/accounts/2fa/webauthn/add/"
    assert credentials(cdp, authenticator) == []
    # The same page at the issuer's own address adds it.
    page.goto(localhost_issuer + "/accounts/login/")
    log_in(page, "enduser")
    add_passkey(page, localhost_issuer, "Laptop", passwordless=True)
    assert urlsplit(page.url).path == "/accounts/2fa/recovery-codes/", page.url
    assert len(credentials(cdp, authenticator)) == 1


def test_staff_enrolls_a_passkey_on_a_phone_width_page(people, localhost_issuer, chromium, screenshots, settings):
    settings.OAUTH_STAFF_MFA_REQUIRED = True
    base = localhost_issuer
    audit = Audit(screenshots)
    page = new_page(chromium, width=390, height=844)
    cdp, authenticator = virtual_authenticator(page)

    page.goto(base + "/admin/")
    assert urlsplit(page.url).path == "/accounts/login/"
    audit(page, "login")
    log_in(page, "admin")
    # No second factor yet: sent to set one up, not into the admin.
    page.goto(base + "/admin/")
    assert urlsplit(page.url).path == "/accounts/2fa/", page.url
    audit(page, "second-factors")
    with page.expect_navigation():
        page.get_by_role("link", name="Add a passkey").click()
    audit(page, "add-passkey")
    page.fill("#id_name", "Admin phone")
    with page.expect_navigation():
        page.click("#mfa_webauthn_add")
    # Registering the passkey proved it: the new recovery codes, not a confirmation with it.
    assert urlsplit(page.url).path == "/accounts/2fa/recovery-codes/", page.url
    audit(page, "after-adding")
    assert len(credentials(cdp, authenticator)) == 1

    # The password and the passkey just registered: two factors, the admin opens.
    page.goto(base + "/admin/")
    assert urlsplit(page.url).path == "/admin/", page.url
    audit(page, "admin")
    # The confirmation an older sign-in meets before a change that grants a power, with the passkey.
    page.goto(base + "/accounts/2fa/webauthn/reauthenticate/?next=/admin/")
    audit(page, "confirm-with-passkey")
    with page.expect_navigation():
        page.click("#mfa_webauthn_reauthenticate")
    assert urlsplit(page.url).path == "/admin/", page.url
    audit.assert_clean()
