"""A passkey ceremony is accepted from OAUTH_ISSUER's origin only, exactly (accounts.passkeys).

The attack (issue 38, "Also"): MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN was switched on by a prefix match
on the issuer (`http://localhost…`, `http://127.0.0.1…`), and allauth then accepts any origin: an
assertion signed by the user's passkey, whose client data named `http://evil.example`, signed in.
Here the device's key is in software (tests/accounts/helpers.SoftPasskey), so that the client data
can name any origin; the signature is the key's own, valid, every time.
"""

import json
from urllib.parse import urlsplit

import pytest
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.core.cache import cache
from django.test import Client

from accounts.passkeys import passkey_origin_allowed
from tests.accounts.helpers import SoftPasskey, issuer_origin, log_in

ADD_PASSKEY = "/accounts/2fa/webauthn/add/"
PASSKEY_LOGIN = "/accounts/2fa/webauthn/login/"

# Other origins than the issuer's, each accepted by some check once ({host}: the issuer's host).
FORGED_ORIGINS = [
    "http://evil.example",  # anything, under MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN
    "http://{host}.evil.example",  # the issuer's host as a prefix
    "http://sub.{host}",  # a subdomain (fido2's own check allows one)
    "https://{host}",  # another scheme
    "http://{host}:8443",  # another port (fido2's own check allows any)
    "null",
    "",
]


def forged(origin: str) -> str:
    return origin.format(host=urlsplit(settings.OAUTH_ISSUER).hostname)


@pytest.fixture(autouse=True, params=["http://testserver", "http://localhost:8000"])
def passkey_issuer(request, settings):
    """The test server's issuer, and `make run`'s (the one the old prefix match switched allauth's
    any-origin mode on for): the relying party is the issuer's host, whatever Host a request has.
    allauth's limit on passkey sign-ins (10 a minute per address) starts over for each test."""
    cache.clear()
    settings.OAUTH_ISSUER = request.param
    return request.param


@pytest.fixture
def passkey_user(end_user):
    """The end user with a passkey registered through the page, from the issuer's origin."""
    device = SoftPasskey()
    browser, _ = log_in("enduser")
    browser.get(ADD_PASSKEY)
    added = browser.post(
        ADD_PASSKEY, {"name": "Phone", "passwordless": "on", "credential": json.dumps(device.register(browser))}
    )
    assert added.status_code == 302, added.content[:500]
    assert Authenticator.objects.filter(user=end_user, type=Authenticator.Type.WEBAUTHN).count() == 1
    return end_user, device


def passwordless_login(device, user, *, origin=None):
    """A passkey sign-in from the login page, as allauth's script does it: the challenge, then the answer."""
    browser = Client()
    options = browser.get(PASSKEY_LOGIN, HTTP_ACCEPT="application/json")
    assert options.status_code == 200 and options.json()["request_options"]["publicKey"]["challenge"]
    answer = browser.post(PASSKEY_LOGIN, {"credential": json.dumps(device.assertion(browser, user, origin=origin))})
    return browser, answer


def signed_in(browser) -> bool:
    return "_auth_user_id" in browser.session


def test_a_passkey_signs_in_from_the_issuers_origin(passkey_user):
    user, device = passkey_user
    browser, answer = passwordless_login(device, user)
    assert answer.status_code == 302 and answer["Location"] == "/settings/apps/"
    assert browser.session["_auth_user_id"] == str(user.pk)


@pytest.mark.parametrize("origin", FORGED_ORIGINS)
def test_an_assertion_naming_another_origin_signs_nobody_in(passkey_user, origin):
    user, device = passkey_user
    browser, answer = passwordless_login(device, user, origin=forged(origin))
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    assert not signed_in(browser)


def test_allauths_insecure_origin_switch_reopens_nothing(passkey_user, settings):
    # The setting that let any origin through: our relying party server does not read it.
    settings.MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = True
    user, device = passkey_user
    browser, _ = passwordless_login(device, user, origin="http://evil.example")
    assert not signed_in(browser)


def test_a_second_step_naming_another_origin_is_refused(passkey_user):
    user, device = passkey_user
    browser, _ = log_in("enduser")
    page = browser.get("/accounts/2fa/authenticate/")
    assert page.status_code == 200
    refused = browser.post(
        "/accounts/2fa/authenticate/",
        {"credential": json.dumps(device.assertion(browser, user, origin="http://evil.example"))},
    )
    assert refused.status_code == 200 and not signed_in(browser)
    page = browser.get("/accounts/2fa/authenticate/")
    accepted = browser.post("/accounts/2fa/authenticate/", {"credential": json.dumps(device.assertion(browser, user))})
    assert accepted.status_code == 302 and signed_in(browser)


@pytest.mark.parametrize("origin", FORGED_ORIGINS)
def test_a_registration_naming_another_origin_adds_nothing(end_user, origin):
    browser, _ = log_in("enduser")
    browser.get(ADD_PASSKEY)
    registration = SoftPasskey().register(browser, origin=forged(origin))
    refused = browser.post(ADD_PASSKEY, {"name": "Laptop", "credential": json.dumps(registration)})
    assert refused.status_code == 200 and refused.context["form"].errors
    assert not Authenticator.objects.filter(user=end_user).exists()


@pytest.mark.parametrize(
    "configured, origin, allowed",
    [
        ("http://localhost:8000", "http://localhost:8000", True),
        ("http://localhost:8000", "http://LOCALHOST:8000", True),
        ("http://localhost:8000", "http://localhost:8001", False),
        ("http://localhost:8000", "http://localhost", False),
        ("http://localhost:8000", "http://localhost.evil.example:8000", False),
        ("http://localhost:8000", "https://localhost:8000", False),
        ("http://localhost:8000", "http://localhost:8000/path", False),
        ("http://localhost:8000", "http://user@localhost:8000", False),
        ("https://auth.example.com", "https://auth.example.com", True),
        ("https://auth.example.com", "https://auth.example.com:443", True),
        ("https://auth.example.com", "https://auth.example.com.evil.example", False),
        ("https://auth.example.com", "https://evil.auth.example.com", False),
        ("https://auth.example.com/tenant", "https://auth.example.com", True),
        ("https://auth.example.com", "https://auth.example.com:99999", False),
        ("https://auth.example.com", None, False),
    ],
)
def test_the_origin_rule(settings, configured, origin, allowed):
    settings.OAUTH_ISSUER = configured
    assert passkey_origin_allowed(origin) is allowed


def test_the_issuers_origin_is_what_the_rule_expects(passkey_issuer):
    assert issuer_origin() == passkey_issuer
    assert passkey_origin_allowed(issuer_origin())
