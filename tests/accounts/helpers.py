"""Signing in through the pages, with a password and a TOTP code, as a person does."""

import time

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


def next_totp_code(secret: str) -> str:
    """The authenticator app's code a period ahead: the one typed at set-up is used up (RFC 6238
    §5.2, accounts.forms.ActivateTOTPForm), and the app's next is accepted by allauth with
    MFA_TOTP_TOLERANCE = 1, which a test that calls this sets (no test waits 30 s for the next period)."""
    return pyotp.TOTP(secret).at(time.time() + 30)


def totp_secret_of(user) -> str:
    authenticator = Authenticator.objects.get(user=user, type=Authenticator.Type.TOTP)
    return MFAAdapter().decrypt(authenticator.data["secret"])


def recovery_codes_of(user) -> list[str]:
    return Authenticator.objects.get(user=user, type=Authenticator.Type.RECOVERY_CODES).wrap().get_unused_codes()


def second_step(browser, code: str):
    return browser.post("/accounts/2fa/authenticate/", {"code": code})


def passkey_registration(browser, *, challenge: str | None = None, rp_id: str = "testserver") -> dict:
    """What a device answers to /accounts/2fa/webauthn/add/'s challenge: a registration of a fresh
    P-256 key with attestation "none" (WebAuthn §6.5.4), built with fido2's own structures; the
    browser tests have Chromium's virtual authenticator do the same (tests/browser/test_passkeys.py).
    `challenge` (base64url): another than the one the page asked, to see it refused."""
    import hashlib
    import os

    from allauth.mfa.webauthn.internal.auth import STATE_SESSION_KEY
    from cryptography.hazmat.primitives.asymmetric import ec
    from fido2.cose import ES256
    from fido2.utils import websafe_encode
    from fido2.webauthn import Aaguid, AttestationObject, AttestedCredentialData, AuthenticatorData, CollectedClientData

    key = ec.generate_private_key(ec.SECP256R1())
    credential_id = os.urandom(32)
    attested = AttestedCredentialData.create(Aaguid.NONE, credential_id, ES256.from_cryptography_key(key.public_key()))
    flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV | AuthenticatorData.FLAG.AT
    authenticator_data = AuthenticatorData.create(hashlib.sha256(rp_id.encode()).digest(), flags, 0, attested)
    client_data = CollectedClientData.create(
        type="webauthn.create",
        challenge=challenge or browser.session[STATE_SESSION_KEY]["challenge"],
        origin=f"https://{rp_id}",
    )
    return {
        "id": websafe_encode(credential_id),
        "rawId": websafe_encode(credential_id),
        "type": "public-key",
        "response": {
            "clientDataJSON": websafe_encode(client_data),
            "attestationObject": websafe_encode(AttestationObject.create("none", authenticator_data, {})),
        },
        "clientExtensionResults": {},
    }
