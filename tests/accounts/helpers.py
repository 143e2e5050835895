"""Signing in through the pages, with a password and a TOTP code, as a person does."""

import pyotp
from allauth.mfa.models import Authenticator
from django.test import Client

from accounts.adapter import MFAAdapter
from tests.factories import PASSWORD


def log_in(identifier, password=PASSWORD, *, browser=None, next_url=None):
    browser = browser or Client()
    data = {"login": identifier, "password": password}
    if next_url:
        data["next"] = next_url
    return browser, browser.post("/accounts/login/", data)


def totp_activate(browser) -> str:
    """Set up TOTP on the signed-in account through allauth's page; the secret, as the app saw it."""
    page = browser.get("/accounts/2fa/totp/activate/")
    assert page.status_code == 200, page.status_code
    secret = page.context["form"].secret
    done = browser.post("/accounts/2fa/totp/activate/", {"code": pyotp.TOTP(secret).now()})
    assert done.status_code == 302, done.content[:500]
    return secret


def totp_secret_of(user) -> str:
    authenticator = Authenticator.objects.get(user=user, type=Authenticator.Type.TOTP)
    return MFAAdapter().decrypt(authenticator.data["secret"])


def recovery_codes_of(user) -> list[str]:
    return Authenticator.objects.get(user=user, type=Authenticator.Type.RECOVERY_CODES).wrap().get_unused_codes()


def second_step(browser, code: str):
    return browser.post("/accounts/2fa/authenticate/", {"code": code})
