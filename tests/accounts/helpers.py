"""Signing in through the pages, with a password and a TOTP code, as a person does."""

import hashlib
import os
import time
from urllib.parse import urlsplit

import pyotp
from allauth.account.utils import user_pk_to_url_str
from allauth.mfa.models import Authenticator
from allauth.mfa.webauthn.internal.auth import STATE_SESSION_KEY
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from django.test import Client
from fido2.cose import ES256
from fido2.utils import websafe_encode
from fido2.webauthn import Aaguid, AttestationObject, AttestedCredentialData, AuthenticatorData, CollectedClientData

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


def issuer_origin() -> str:
    """OAUTH_ISSUER's origin: the page a browser runs passkey ceremonies on (accounts.passkeys)."""
    parts = urlsplit(settings.OAUTH_ISSUER)
    return f"{parts.scheme}://{parts.netloc}"


class SoftPasskey:
    """A device's passkey in software: a fresh P-256 key that answers WebAuthn ceremonies as an
    authenticator would (attestation "none", WebAuthn §6.5.4; assertions §6.3.3), built with fido2's
    own structures; the browser tests have Chromium's virtual authenticator do the same
    (tests/browser/test_passkeys.py). The origin the client data names is the issuer's unless
    told otherwise, to see another refused."""

    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)

    @staticmethod
    def _rp_id_hash(rp_id: str | None) -> bytes:
        return hashlib.sha256((rp_id or urlsplit(settings.OAUTH_ISSUER).hostname).encode()).digest()

    def register(self, browser, *, challenge: str | None = None, origin: str | None = None, rp_id=None) -> dict:
        """What the device answers to /accounts/2fa/webauthn/add/'s challenge (kept in `browser`'s session)."""
        attested = AttestedCredentialData.create(
            Aaguid.NONE, self.credential_id, ES256.from_cryptography_key(self.key.public_key())
        )
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV | AuthenticatorData.FLAG.AT
        authenticator_data = AuthenticatorData.create(self._rp_id_hash(rp_id), flags, 0, attested)
        client_data = CollectedClientData.create(
            type="webauthn.create",
            challenge=challenge or browser.session[STATE_SESSION_KEY]["challenge"],
            origin=issuer_origin() if origin is None else origin,
        )
        return {
            "id": websafe_encode(self.credential_id),
            "rawId": websafe_encode(self.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": websafe_encode(client_data),
                "attestationObject": websafe_encode(AttestationObject.create("none", authenticator_data, {})),
            },
            "clientExtensionResults": {},
        }

    def assertion(self, browser, user, *, origin: str | None = None, counter: int = 1) -> dict:
        """The device's signed answer to the challenge a passkey page gave `browser`, for `user`."""
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV
        authenticator_data = AuthenticatorData.create(self._rp_id_hash(None), flags, counter)
        client_data = CollectedClientData.create(
            type="webauthn.get",
            challenge=browser.session[STATE_SESSION_KEY]["challenge"],
            origin=issuer_origin() if origin is None else origin,
        )
        signature = self.key.sign(
            bytes(authenticator_data) + hashlib.sha256(bytes(client_data)).digest(), ec.ECDSA(hashes.SHA256())
        )
        return {
            "id": websafe_encode(self.credential_id),
            "rawId": websafe_encode(self.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": websafe_encode(client_data),
                "authenticatorData": websafe_encode(authenticator_data),
                "signature": websafe_encode(signature),
                "userHandle": websafe_encode(user_pk_to_url_str(user).encode()),
            },
            "clientExtensionResults": {},
        }


def passkey_registration(browser, *, challenge: str | None = None, origin: str | None = None) -> dict:
    """A fresh passkey's registration answering /accounts/2fa/webauthn/add/'s challenge (SoftPasskey).
    `challenge` (base64url): another than the one the page asked, to see it refused."""
    return SoftPasskey().register(browser, challenge=challenge, origin=origin)
