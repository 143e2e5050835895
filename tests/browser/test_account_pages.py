"""allauth's pages in our look, axe-clean at 1280 and 390 px: the second-factor challenge, recovery
codes, passkeys, password reset, email verification and "Continue with…"; and the authorization
request the person came with survives the second-factor challenge and a recovery code (the consent
page of the same request comes next). The upstream and passkey sign-ins' return path is proved in
test_upstream_provider.py and here with a passkey.
"""

import re
from urllib.parse import urlencode, urlsplit

import pyotp
import pytest
from django.conf import settings

from tests.browser.conftest import new_page
from tests.browser.test_journey import log_in
from tests.browser.test_journeys import VIEWPORTS, Audit
from tests.browser.test_passkeys import add_passkey, log_out, virtual_authenticator
from tests.browser.test_upstream_provider import in_thread

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def account_pages_cast(people, live_server, settings):
    """An end user with TOTP and recovery codes, an upstream provider record, an approved app."""
    from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
    from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret
    from django.core.cache import cache

    from accounts.services import identity_provider_add
    from tests.factories import make_client

    cache.clear()  # allauth's limit on verification mails (one per address per 3 min) starts over
    settings.OAUTH_ISSUER = live_server.url
    user = people["enduser"]
    secret = generate_totp_secret()
    TOTP.activate(user, secret)
    codes = RecoveryCodes.activate(user).get_unused_codes()
    identity_provider_add(
        name="Acme SSO",
        issuer="https://sso.acme.example",
        client_id="x",
        client_secret="y" * 20,
        domains=[],
        enforce=False,
    )
    app = make_client(
        people["developer"], scopes=["PROFILE_READ"], redirect_uris=["https://app.example/cb"], approve=True
    )
    query = urlencode(
        {
            "client_id": app.client.client_id,
            "redirect_uri": "https://app.example/cb",
            "scope": "PROFILE_READ",
            "state": "st-1",
            "response_type": "code",
        }
    )
    return {"secret": secret, "codes": codes, "authorize": f"{settings.OAUTH_AUTHORIZE_PATH}?{query}"}


def _reset_link(base: str) -> str:
    from django.core import mail

    body = mail.outbox[-1].body
    return re.search(re.escape(base) + r"(/accounts/password/reset/key/\S+)", body)[1]


def _confirm_link(base: str) -> str:
    from django.core import mail

    body = mail.outbox[-1].body
    found = re.search(re.escape(base) + r"(/accounts/confirm-email/\S+)", body)
    assert found, [m.body for m in mail.outbox]
    return found[1]


def _on_consent(page, authorize: str) -> None:
    assert urlsplit(page.url).path == settings.OAUTH_AUTHORIZE_PATH, page.url
    assert urlsplit(page.url).query == urlsplit(authorize).query
    assert page.get_by_role("button", name="Allow", exact=True).is_visible()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_every_account_page_is_ours_and_axe_clean(account_pages_cast, live_server, chromium, screenshots, viewport):
    width, height = VIEWPORTS[viewport]
    base = live_server.url
    audit = Audit(screenshots)
    page = new_page(chromium, width=width, height=height)

    # The second-factor challenge, reached from an app's authorization request; the consent of the
    # same request comes after it.
    page.goto(base + account_pages_cast["authorize"])
    audit(page, "login")
    log_in(page, "enduser")
    assert urlsplit(page.url).path == "/accounts/2fa/authenticate/"
    audit(page, "second-factor")
    page.fill("#id_code", pyotp.TOTP(account_pages_cast["secret"]).now())
    with page.expect_navigation():
        page.click("main button[type=submit]")
    _on_consent(page, account_pages_cast["authorize"])

    # Second factors, recovery codes, passkeys (signed in with the second factor: no confirmation).
    for path, name in [
        ("/accounts/security/", "sign-in-methods"),
        ("/accounts/2fa/", "second-factors"),
        ("/accounts/2fa/recovery-codes/", "recovery-codes"),
        ("/accounts/2fa/recovery-codes/generate/", "recovery-codes-generate"),
        ("/accounts/2fa/webauthn/add/", "passkey-add"),
        ("/accounts/2fa/totp/deactivate/", "totp-deactivate"),  # ours: warns before the last factor goes
        ("/accounts/email/", "email-addresses"),
        ("/accounts/password/change/", "password-change"),
    ]:
        page.goto(base + path)
        assert urlsplit(page.url).path == path, (path, page.url)
        audit(page, name)
    assert account_pages_cast["codes"][0] in page.goto(base + "/accounts/2fa/recovery-codes/").text()

    # Email verification: the link mailed for the account's address.
    page.goto(base + "/accounts/email/")
    with page.expect_navigation():
        page.click("button[name=action_send]")
    audit(page, "verification-sent")
    page.goto(base + in_thread(lambda: _confirm_link(base)))
    audit(page, "email-confirm")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    audit(page, "email-confirmed")
    log_out(page, base)

    # A recovery code instead of the app, from an app's request: the consent of that request next.
    page.goto(base + account_pages_cast["authorize"])
    log_in(page, "enduser")
    page.fill("#id_code", account_pages_cast["codes"][1])
    with page.expect_navigation():
        page.click("main button[type=submit]")
    _on_consent(page, account_pages_cast["authorize"])
    log_out(page, base)

    # Password reset, end to end through the pages, started from an app's request: the end of the
    # reset leads back to it (through the login and the second factor).
    page.goto(base + account_pages_cast["authorize"])
    with page.expect_navigation():
        page.get_by_role("link", name="Forgot your password?").click()
    audit(page, "password-reset")
    page.fill("#id_email", "enduser@example.com")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    audit(page, "password-reset-done")
    page.goto(base + in_thread(lambda: _reset_link(base)))
    audit(page, "password-reset-from-key")
    page.fill("#id_password1", "a-new-passphrase-for-enduser-7")
    page.fill("#id_password2", "a-new-passphrase-for-enduser-7")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    audit(page, "password-reset-from-key-done")
    with page.expect_navigation():
        page.get_by_role("link", name=re.compile("^Log in and continue to ")).click()
    page.fill("#id_login", "enduser")
    page.fill("#id_password", "a-new-passphrase-for-enduser-7")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    page.fill("#id_code", account_pages_cast["codes"][2])
    with page.expect_navigation():
        page.click("main button[type=submit]")
    _on_consent(page, account_pages_cast["authorize"])
    log_out(page, base)

    # "Continue with…": the confirmation before leaving for the provider.
    page.goto(base + "/accounts/login/")
    with page.expect_navigation():
        page.get_by_role("link", name="Acme SSO").click()
    audit(page, "continue-with")
    audit.assert_clean()


def test_a_passkey_second_factor_keeps_the_authorization_request(account_pages_cast, live_server, chromium):
    base = live_server.url
    page = new_page(chromium)
    virtual_authenticator(page)
    page.goto(base + "/accounts/login/")
    log_in(page, "enduser")
    page.fill("#id_code", pyotp.TOTP(account_pages_cast["secret"]).now())
    with page.expect_navigation():
        page.click("main button[type=submit]")
    add_passkey(page, base, "Laptop", passwordless=True)
    log_out(page, base)
    page.goto(base + account_pages_cast["authorize"])
    with page.expect_navigation():
        page.click("#passkey_login")
    _on_consent(page, account_pages_cast["authorize"])
