"""Second-factor codes and re-authentication, limited per account and per address (issue "The front
door holds", High 1): 30 wrong codes, then even the right one waits for the window; a passkey and a
password reset stay open (plumbing.ratelimit, `attempts` limits; docs/accounts.md)."""

import hashlib
import json
import os
import re
import time

import pyotp
import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP
from allauth.mfa.webauthn.internal.auth import STATE_SESSION_KEY, WebAuthn
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from django.core import mail
from django.core.cache import caches
from django.test import Client

from tests.accounts.helpers import issuer_origin
from tests.factories import PASSWORD, make_user

LOGIN, SECOND_STEP = "/accounts/login/", "/accounts/2fa/authenticate/"
REAUTHENTICATE, CODE_REAUTHENTICATE = "/accounts/reauthenticate/", "/accounts/2fa/reauthenticate/"
PASSKEY_LOGIN, PASSKEY_REAUTHENTICATE = "/accounts/2fa/webauthn/login/", "/accounts/2fa/webauthn/reauthenticate/"
HERE, ELSEWHERE, THIRD = "198.51.100.1", "198.51.100.2", "198.51.100.3"
LIMIT, WINDOW = 30, 15 * 60  # the production default (config/settings.py)


@pytest.fixture(autouse=True)
def _production_limits(settings):
    """The production limits on this door (the test settings loosen every limit), and no counts left
    by another test."""
    settings.RATELIMITS = {
        **settings.RATELIMITS,
        "second_factor_failures_per_account": (LIMIT, WINDOW),
        "second_factor_failures_per_address": (LIMIT, WINDOW),
    }
    settings.MFA_TOTP_TOLERANCE = 1  # a code computed a moment before a period ends still passes
    caches["default"].clear()
    yield
    caches["default"].clear()


def limits(settings, *, account=None, address=None):
    if account:
        settings.RATELIMITS = {**settings.RATELIMITS, "second_factor_failures_per_account": account}
    if address:
        settings.RATELIMITS = {**settings.RATELIMITS, "second_factor_failures_per_address": address}


def with_totp(username: str):
    """A person with an authenticator app (set up directly: the set-up page has its own tests)."""
    user = make_user(username)
    secret = pyotp.random_base32()
    TOTP.activate(user, secret)
    return user, secret


def right_code(secret: str) -> str:
    return pyotp.TOTP(secret).now()


def wrong_code(secret: str) -> str:
    """A code no period within the tolerance accepts."""
    now, totp = time.time(), pyotp.TOTP(secret)
    valid = {totp.at(now + shift) for shift in (-60, -30, 0, 30, 60)}
    code = os.urandom(3).hex()[:6].translate(str.maketrans("abcdef", "012345"))
    return code if code not in valid else wrong_code(secret)


def at_second_step(username: str, address: str = HERE) -> Client:
    """A browser whose password was right: the sign-in now asks for the second factor."""
    browser = Client(REMOTE_ADDR=address)
    response = browser.post(LOGIN, {"login": username, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"].startswith(SECOND_STEP), response.content[:300]
    return browser


def signed_in(browser) -> bool:
    return "_auth_user_id" in browser.session


def assert_refused(response, *, within: int = WINDOW):
    assert response.status_code == 429, (response.status_code, response.content[:300])
    assert 1 <= int(response["Retry-After"]) <= within
    assert response["Cache-Control"] == "no-store"
    page = response.content.decode()
    assert "Too many wrong codes" in page and "not even the right one" in page
    # The ways in that stay open are named, with their links.
    assert 'href="/accounts/login/"' in page and 'href="/accounts/password/reset/"' in page
    assert "passkey" in page


# --- the attack: a stolen password, then guessing the code ------------------------------------------


def test_thirty_wrong_codes_then_the_right_one_signs_nobody_in(db):
    user, secret = with_totp("alice")
    browser = at_second_step("alice")
    for _ in range(LIMIT):
        wrong = browser.post(SECOND_STEP, {"code": wrong_code(secret)})
        assert wrong.status_code == 200 and not signed_in(browser)
    assert_refused(browser.post(SECOND_STEP, {"code": right_code(secret)}))
    assert not signed_in(browser)
    assert browser.get("/admin/").status_code == 302  # nothing opened


def test_twenty_nine_wrong_codes_then_the_right_one_signs_in(db):
    # The edge: the right code as the thirtieth attempt is still checked.
    user, secret = with_totp("alice")
    browser = at_second_step("alice")
    for _ in range(LIMIT - 1):
        assert browser.post(SECOND_STEP, {"code": wrong_code(secret)}).status_code == 200
    assert browser.post(SECOND_STEP, {"code": right_code(secret)}).status_code == 302
    assert signed_in(browser)


def test_the_accounts_budget_is_spent_from_every_address_and_every_sign_in(db):
    user, secret = with_totp("alice")
    for address in (HERE, ELSEWHERE, THIRD):
        browser = at_second_step("alice", address)
        for _ in range(LIMIT // 3):
            assert browser.post(SECOND_STEP, {"code": wrong_code(secret)}).status_code == 200
    fresh = at_second_step("alice", "198.51.100.4")
    assert_refused(fresh.post(SECOND_STEP, {"code": right_code(secret)}))
    assert not signed_in(fresh)
    # Another account at those addresses is not refused: each address saw only ten wrong codes.
    _bob, bob_secret = with_totp("bob")
    other = at_second_step("bob", HERE)
    assert other.post(SECOND_STEP, {"code": right_code(bob_secret)}).status_code == 302 and signed_in(other)


def test_recovery_codes_spend_the_same_budget(db):
    from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes

    user, secret = with_totp("alice")
    codes = RecoveryCodes.activate(user).get_unused_codes()
    browser = at_second_step("alice")
    for _ in range(LIMIT):
        assert browser.post(SECOND_STEP, {"code": "0123abcd"}).status_code == 200
    assert_refused(browser.post(SECOND_STEP, {"code": codes[0]}))
    assert not signed_in(browser)
    assert set(Authenticator.objects.get(user=user, type="recovery_codes").wrap().get_unused_codes()) == set(codes)


def test_an_address_is_limited_across_accounts(db):
    people = [with_totp(name) for name in ("alice", "bob", "carol")]
    for user, secret in people[:2]:
        browser = at_second_step(user.username)
        for _ in range(LIMIT // 2):
            assert browser.post(SECOND_STEP, {"code": wrong_code(secret)}).status_code == 200
    carol, carol_secret = people[2]
    here = at_second_step("carol", HERE)
    assert_refused(here.post(SECOND_STEP, {"code": right_code(carol_secret)}))
    assert not signed_in(here)
    elsewhere = at_second_step("carol", ELSEWHERE)
    assert elsewhere.post(SECOND_STEP, {"code": right_code(carol_secret)}).status_code == 302
    assert signed_in(elsewhere)


def test_right_codes_are_given_back(db, settings):
    # An office behind one address signs in all day: only the wrong codes count.
    limits(settings, address=(2, WINDOW))
    people = [with_totp(f"person{index}") for index in range(5)]
    for user, secret in people[:3]:
        browser = at_second_step(user.username)
        assert browser.post(SECOND_STEP, {"code": right_code(secret)}).status_code == 302 and signed_in(browser)
    user, secret = people[3]
    browser = at_second_step(user.username)
    for _ in range(2):
        assert browser.post(SECOND_STEP, {"code": wrong_code(secret)}).status_code == 200
    assert_refused(at_second_step(people[4][0].username).post(SECOND_STEP, {"code": right_code(people[4][1])}))


def test_when_the_window_closes_the_right_code_signs_in(db, settings):
    limits(settings, account=(3, 2))
    user, secret = with_totp("alice")
    browser = at_second_step("alice")
    for _ in range(3):
        assert browser.post(SECOND_STEP, {"code": wrong_code(secret)}).status_code == 200
    refused = browser.post(SECOND_STEP, {"code": right_code(secret)})
    assert_refused(refused, within=2)
    time.sleep(int(refused["Retry-After"]) + 0.2)
    assert browser.post(SECOND_STEP, {"code": right_code(secret)}).status_code == 302
    assert signed_in(browser)


def test_viewing_the_second_step_is_not_limited(db, settings):
    limits(settings, account=(1, WINDOW))
    user, secret = with_totp("alice")
    browser = at_second_step("alice")
    assert browser.post(SECOND_STEP, {"code": wrong_code(secret)}).status_code == 200
    assert browser.get(SECOND_STEP).status_code == 200
    assert_refused(browser.post(SECOND_STEP, {"code": right_code(secret)}))


# --- re-authentication: the same two budgets ---------------------------------------------------------


def signed_in_with_the_code(username: str, secret: str, address: str = HERE) -> Client:
    browser = at_second_step(username, address)
    assert browser.post(SECOND_STEP, {"code": right_code(secret)}).status_code == 302
    return browser


def test_re_authentication_with_a_code_is_limited(db):
    user, secret = with_totp("alice")
    browser = signed_in_with_the_code("alice", secret)
    for _ in range(LIMIT):
        assert browser.post(CODE_REAUTHENTICATE, {"code": wrong_code(secret)}).status_code == 200
    assert_refused(browser.post(CODE_REAUTHENTICATE, {"code": right_code(secret)}))


def test_the_sign_in_and_the_re_authentication_spend_one_budget_per_account(db):
    user, secret = with_totp("alice")
    browser = signed_in_with_the_code("alice", secret, ELSEWHERE)
    for _ in range(LIMIT // 2):
        assert browser.post(CODE_REAUTHENTICATE, {"code": wrong_code(secret)}).status_code == 200
    attacker = at_second_step("alice", HERE)
    for _ in range(LIMIT // 2):
        assert attacker.post(SECOND_STEP, {"code": wrong_code(secret)}).status_code == 200
    assert_refused(attacker.post(SECOND_STEP, {"code": right_code(secret)}))
    assert_refused(browser.post(CODE_REAUTHENTICATE, {"code": right_code(secret)}))


def test_re_authentication_with_a_password_is_limited(db):
    make_user("dave")  # no second factor: confirms with the password
    browser = Client(REMOTE_ADDR=HERE)
    assert browser.post(LOGIN, {"login": "dave", "password": PASSWORD}).status_code == 302
    for _ in range(LIMIT):
        assert browser.post(REAUTHENTICATE, {"password": "not-the-password"}).status_code == 200
    assert_refused(browser.post(REAUTHENTICATE, {"password": PASSWORD}))
    # allauth's own limit on this page (10 a minute, every post) is off: ours is the one
    # (config/settings.py ACCOUNT_RATE_LIMITS); thirty wrong passwords were all checked above.


def test_a_right_re_authentication_is_given_back(db, settings):
    limits(settings, account=(2, WINDOW))
    make_user("dave")
    browser = Client(REMOTE_ADDR=HERE)
    assert browser.post(LOGIN, {"login": "dave", "password": PASSWORD}).status_code == 302
    for _ in range(4):
        assert browser.post(REAUTHENTICATE, {"password": PASSWORD}).status_code == 302
    for _ in range(2):
        assert browser.post(REAUTHENTICATE, {"password": "wrong"}).status_code == 200
    assert_refused(browser.post(REAUTHENTICATE, {"password": PASSWORD}))


# --- what stays open: a passkey, a password reset ----------------------------------------------------

RP_ID = "testserver"  # OAUTH_ISSUER's host in the test settings; the origin is its origin (accounts.passkeys)


class Passkey:
    """A device's passkey for `user`, registered directly (the registration ceremony has its own tests,
    tests/accounts/test_setting_up_a_factor.py), answering challenges as a device does (WebAuthn §6.3.3)."""

    def __init__(self, user):
        from fido2.cose import ES256
        from fido2.utils import websafe_encode
        from fido2.webauthn import (
            Aaguid,
            AttestationObject,
            AttestedCredentialData,
            AuthenticatorData,
            CollectedClientData,
        )

        self.user, self.key, self.credential_id = user, ec.generate_private_key(ec.SECP256R1()), os.urandom(32)
        attested = AttestedCredentialData.create(
            Aaguid.NONE, self.credential_id, ES256.from_cryptography_key(self.key.public_key())
        )
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV | AuthenticatorData.FLAG.AT
        data = AuthenticatorData.create(hashlib.sha256(RP_ID.encode()).digest(), flags, 0, attested)
        WebAuthn.add(
            user,
            "Laptop",
            {
                "id": websafe_encode(self.credential_id),
                "rawId": websafe_encode(self.credential_id),
                "type": "public-key",
                "response": {
                    "clientDataJSON": websafe_encode(
                        CollectedClientData.create(
                            type="webauthn.create", challenge=os.urandom(32), origin=issuer_origin()
                        )
                    ),
                    "attestationObject": websafe_encode(AttestationObject.create("none", data, {})),
                },
                "clientExtensionResults": {"credProps": {"rk": True}},
            },
        )
        self.counter = 0

    def answer(self, browser, *, forged: bool = False) -> str:
        """The assertion for the challenge the page just asked (in the browser's session); `forged`:
        signed by another key than the one registered."""
        from fido2.utils import websafe_encode
        from fido2.webauthn import AuthenticatorData, CollectedClientData

        self.counter += 1
        challenge = browser.session[STATE_SESSION_KEY]["challenge"]
        client_data = CollectedClientData.create(type="webauthn.get", challenge=challenge, origin=issuer_origin())
        flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV
        data = AuthenticatorData.create(hashlib.sha256(RP_ID.encode()).digest(), flags, self.counter)
        key = ec.generate_private_key(ec.SECP256R1()) if forged else self.key
        signature = key.sign(bytes(data) + client_data.hash, ec.ECDSA(hashes.SHA256()))
        from allauth.account.utils import user_pk_to_url_str

        return json.dumps(
            {
                "id": websafe_encode(self.credential_id),
                "rawId": websafe_encode(self.credential_id),
                "type": "public-key",
                "response": {
                    "clientDataJSON": websafe_encode(client_data),
                    "authenticatorData": websafe_encode(data),
                    "signature": websafe_encode(signature),
                    "userHandle": websafe_encode(user_pk_to_url_str(self.user).encode()),
                },
                "clientExtensionResults": {},
            }
        )


def locked_out(username: str, secret: str) -> None:
    """An attacker with the password spends the account's budget, and HERE's, on wrong codes."""
    attacker = at_second_step(username, HERE)
    for _ in range(LIMIT):
        assert attacker.post(SECOND_STEP, {"code": wrong_code(secret)}).status_code == 200
    assert_refused(at_second_step(username, ELSEWHERE).post(SECOND_STEP, {"code": right_code(secret)}))


def test_a_locked_account_still_signs_in_with_a_passkey_without_its_password(db):
    user, secret = with_totp("alice")
    passkey = Passkey(user)
    locked_out("alice", secret)
    browser = Client(REMOTE_ADDR=HERE)  # even from the address the guessing came from
    assert browser.get(PASSKEY_LOGIN, HTTP_X_REQUESTED_WITH="XMLHttpRequest").status_code == 200
    response = browser.post(PASSKEY_LOGIN, {"credential": passkey.answer(browser)})
    assert response.status_code == 302 and response["Location"] != LOGIN, response.content[:300]
    assert signed_in(browser)


def test_a_locked_account_still_passes_the_second_step_with_a_passkey(db):
    user, secret = with_totp("alice")
    passkey = Passkey(user)
    locked_out("alice", secret)
    browser = at_second_step("alice", ELSEWHERE)
    assert browser.get(SECOND_STEP).status_code == 200  # the page asks the passkey its challenge
    response = browser.post(SECOND_STEP, {"credential": passkey.answer(browser)})
    assert response.status_code == 302 and signed_in(browser)


def test_a_passkey_at_the_second_step_keeps_the_per_address_limit(db):
    user, secret = with_totp("alice")
    passkey = Passkey(user)
    locked_out("alice", secret)
    browser = at_second_step("alice", HERE)
    browser.get(SECOND_STEP)
    assert_refused(browser.post(SECOND_STEP, {"credential": passkey.answer(browser)}))
    assert not signed_in(browser)


def test_a_refused_passkey_re_authentication_counts_and_a_right_one_does_not(db, settings):
    limits(settings, address=(2, WINDOW))
    user, secret = with_totp("alice")
    passkey = Passkey(user)
    browser = signed_in_with_the_code("alice", secret, ELSEWHERE)
    browser.defaults["REMOTE_ADDR"] = HERE
    for _ in range(3):
        browser.get(PASSKEY_REAUTHENTICATE)
        assert browser.post(PASSKEY_REAUTHENTICATE, {"credential": passkey.answer(browser)}).status_code == 302
    for _ in range(2):
        browser.get(PASSKEY_REAUTHENTICATE)
        refused = browser.post(PASSKEY_REAUTHENTICATE, {"credential": passkey.answer(browser, forged=True)})
        assert refused.status_code == 302 and refused["Location"] == LOGIN
    browser.get(PASSKEY_REAUTHENTICATE)
    assert_refused(browser.post(PASSKEY_REAUTHENTICATE, {"credential": passkey.answer(browser)}))


def test_a_locked_account_resets_its_password_by_email(db):
    user, secret = with_totp("alice")
    locked_out("alice", secret)
    browser = Client(REMOTE_ADDR=HERE)
    asked = browser.post("/accounts/password/reset/", {"email": user.email})
    assert asked.status_code == 302
    (message,) = mail.outbox
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/key/\S+/)", message.body).group(1)
    form = browser.get(link, follow=True)
    done = browser.post(
        form.redirect_chain[-1][0], {"password1": "a-new-passphrase-42", "password2": "a-new-passphrase-42"}
    )
    assert done.status_code == 302
    user.refresh_from_db()
    assert user.check_password("a-new-passphrase-42")
