# ruff: noqa: F811 - the fixture imported from tests/browser/upstream_provider.py is named as an argument
"""Signing in through an upstream identity provider nobody here wrote: panva's `oidc-provider`
(npm, the example examples/idjag_provider, run by tests/browser/upstream_provider.py), started by the test on a
free loopback port, with Chromium going through its pages.

- A person of an enforced domain types their email on our login page, comes from an app's
  authorization request, is sent straight to the provider, signs in there, and lands back on the
  consent page of the same authorization request; allowing gives the app an ID token whose `amr`
  says `fed` (and `mfa`: the provider reported a one-time code). The account was made just in
  time, linked by (provider, sub), and is not staff.
- A nOAuth attempt: the provider says an unverified email equal to a local administrator's. The
  sign-in is refused; nothing is linked to the administrator, and the refusal is audited.
"""

import base64
import json
import re
from urllib.parse import urlencode, urlsplit

import pytest
from django.conf import settings

from tests.browser.conftest import in_thread, new_page
from tests.browser.test_journey import ThirdPartyApp
from tests.browser.upstream_provider import Upstream, upstream_package  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db(transaction=True)

UPSTREAM_SECRET = "upstream-client-secret-for-the-test-0123456789"
ACCOUNTS = {
    # An organization's person, signed in at the provider with a password and a one-time code.
    "wile": {"email": "wile@acme.example", "email_verified": True, "amr": ["pwd", "otp"]},
    # Someone who typed the administrator's address into their upstream profile, unverified.
    "mallory": {"email": "admin@example.com", "email_verified": False, "amr": ["pwd"]},
}


@pytest.fixture
def scene(live_server, settings, upstream_package, people):
    """Our server as issuer, the upstream provider registered with `--enforce` for acme.example,
    and an approved app of ours that signs people in."""
    from accounts.services import identity_provider_add
    from signing.keys import signing_key_create
    from signing.statuslist import allocator

    signing_key_create(algorithm="RS256")  # our ID tokens
    settings.OAUTH_ISSUER = live_server.url
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live_server.url}
    allocator.forget()
    callback = f"{live_server.url}/accounts/oidc/acme-sso/login/callback/"
    client = {"client_id": "scheduling", "client_secret": UPSTREAM_SECRET, "redirect_uris": [callback]}
    upstream = Upstream(upstream_package, clients=[client], accounts=ACCOUNTS)
    identity_provider_add(
        name="Acme SSO",
        issuer=upstream.issuer,
        client_id="scheduling",
        client_secret=UPSTREAM_SECRET,
        domains=["acme.example"],
        enforce=True,
    )
    try:
        yield upstream
    finally:
        upstream.close()


def _claims(id_token: str) -> dict:
    payload = id_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_an_enforced_domain_signs_in_upstream_and_reaches_the_same_consent(scene, live_server, chromium, screenshots):
    base = live_server.url
    with ThirdPartyApp(base) as app:
        app.client_id, app.client_secret = in_thread(lambda: _make_app(app.redirect_uri))
        query = urlencode(
            {
                "client_id": app.client_id,
                "redirect_uri": app.redirect_uri,
                "scope": "openid PROFILE_READ",
                "state": "st-up",
                "nonce": "n-up",
                "response_type": "code",
            }
        )
        authorize = f"{settings.OAUTH_AUTHORIZE_PATH}?{query}"
        page = new_page(chromium, width=390, height=844)
        page.goto(base + authorize)
        assert urlsplit(page.url).path == "/accounts/login/"
        screenshots(page, "login")
        # The person types only their email: the enforced domain sends them to the provider.
        page.fill("#id_login", "wile@acme.example")
        with page.expect_navigation(url=re.compile(re.escape(scene.issuer) + "/interaction/")):
            page.click("main button[type=submit]")
        screenshots(page, "upstream-login")
        assert "Acme SSO" in page.inner_text("h1")
        page.fill("#login", "wile")
        with page.expect_navigation(url=re.compile(re.escape(base) + ".*" + re.escape(settings.OAUTH_AUTHORIZE_PATH))):
            page.click("button[type=submit]")
        # Back on the consent page of the very same authorization request.
        screenshots(page, "consent")
        assert urlsplit(page.url).path == settings.OAUTH_AUTHORIZE_PATH
        assert f"client_id={app.client_id}" in page.url and "state=st-up" in page.url
        with page.expect_navigation(url=re.compile(re.escape(app.redirect_uri) + r"\?")):
            page.get_by_role("button", name="Allow", exact=True).click()
        done = app.callbacks[0]
        assert done.get("token_status") == 200, done
        claims = _claims(done["tokens"]["id_token"])
        assert {"fed", "mfa"} <= set(claims["amr"]), claims
        assert claims["acr"] == "urn:scheduling:acr:2fa" and claims["nonce"] == "n-up"
        page.context.close()

    # Made just in time, linked by (provider, sub), never staff.
    def linked():
        from allauth.socialaccount.models import SocialAccount

        link = SocialAccount.objects.select_related("user").get(provider="acme-sso")
        return link.uid, link.user.email, link.user.is_staff or link.user.is_superuser

    assert in_thread(linked) == ("wile", "wile@acme.example", False)


def _make_app(redirect_uri: str) -> tuple[str, str]:
    from django.contrib.auth import get_user_model

    from tests.factories import make_client

    owner = get_user_model().objects.get(username="developer")
    created = make_client(owner, scopes=["PROFILE_READ"], redirect_uris=[redirect_uri], approve=True)
    return created.client.client_id, created.secret.plaintext


def test_noauth_an_unverified_email_of_an_administrator_links_nothing(scene, live_server, chromium, screenshots):
    base = live_server.url
    page = new_page(chromium)
    page.goto(base + "/accounts/login/")
    with page.expect_navigation():
        page.get_by_role("link", name="Acme SSO").click()
    if urlsplit(page.url).path.startswith("/accounts/oidc/"):  # allauth's "Continue" confirmation
        with page.expect_navigation():
            page.click("main button[type=submit]")
    assert page.url.startswith(scene.issuer + "/interaction/"), page.url
    page.fill("#login", "mallory")
    with page.expect_navigation(url=re.compile(re.escape(base))):
        page.click("button[type=submit]")
    screenshots(page, "refused")
    assert "This sign-in cannot be used here" in page.inner_text("main")
    page.goto(base + "/settings/apps/")
    assert urlsplit(page.url).path == "/accounts/login/"  # nobody signed in
    page.context.close()

    def outcome():
        from allauth.socialaccount.models import SocialAccount
        from django.contrib.auth import get_user_model

        from accounts.models import AccountAuditAction, AccountAuditEvent

        admin = get_user_model().objects.get(username="admin")
        return (
            SocialAccount.objects.count(),
            get_user_model().objects.filter(email__iexact="admin@example.com").exclude(pk=admin.pk).count(),
            AccountAuditEvent.objects.filter(action=AccountAuditAction.UPSTREAM_LINK_REFUSED, user=admin).count(),
        )

    assert in_thread(outcome) == (0, 0, 1)
