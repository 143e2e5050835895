"""Setting up a first second factor proves it: right after, allauth shows the new recovery codes, and
that page does not ask for the factor set up a second before (issue 29's noticed bug). The code
typed at set-up (a passkey's registration) is a fresh second-factor sign-in of that session only
(accounts.services.session_factor_set_up_record); an old sign-in still confirms first, and another
session of the account still confirms with the factor (SECURITY.md, "Accounts and the login").

allauth announces a new authenticator app once its transaction commits, as in production: these
tests commit (transaction=True) rather than run inside the test's rolled-back transaction.
"""

import json
import os
import time

import pyotp
import pytest
from allauth.account.internal.flows.login import record_authentication
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP
from django.contrib.sessions.backends.db import SessionStore
from django.core.cache import cache
from django.test import RequestFactory, override_settings
from fido2.utils import websafe_encode

from accounts.selectors import session_amr
from accounts.services import session_factor_set_up_record
from tests.accounts.helpers import log_in, passkey_registration, recovery_codes_of, second_step, totp_activate
from tests.accounts.test_second_factors import _age_the_sign_in
from tests.factories import make_client, make_user

pytestmark = pytest.mark.django_db(transaction=True)

ACTIVATE = "/accounts/2fa/totp/activate/"
ADD_PASSKEY = "/accounts/2fa/webauthn/add/"
RECOVERY_CODES = "/accounts/2fa/recovery-codes/"


def amr_of(browser, user) -> list[str]:
    """The RFC 8176 `amr` this browser's session would carry (accounts.selectors.session_amr)."""
    request = RequestFactory().get("/")
    request.session, request.user = browser.session, user
    return session_amr(request=request)


def secret_path(client) -> str:
    return f"/settings/developer/clients/{client.client_id}/secrets/generate/"


def test_after_setting_up_an_authenticator_app_the_recovery_codes_show_at_once(end_user):
    browser, _ = log_in("enduser")
    page = browser.get(ACTIVATE)
    secret = page.context["form"].secret
    done = browser.post(ACTIVATE, {"code": pyotp.TOTP(secret).now()})
    assert done.status_code == 302 and done["Location"] == RECOVERY_CODES
    codes = browser.get(RECOVERY_CODES)
    assert codes.status_code == 200, codes.get("Location")
    shown, unused = codes.content.decode(), recovery_codes_of(end_user)
    assert unused and all(code in shown for code in unused)
    # The password and the code just typed: two factors, as a sign-in with both would be.
    assert amr_of(browser, end_user) == ["mfa", "otp", "pwd"]


def test_the_code_typed_at_set_up_counts_for_the_next_sensitive_action_too(end_user):
    client = make_client(end_user, approve=True).client
    browser, _ = log_in("enduser")
    totp_activate(browser)
    browser.post(secret_path(client))
    assert client.secrets.count() == 2


def test_a_wrong_code_at_set_up_adds_and_proves_nothing(end_user):
    browser, _ = log_in("enduser")
    browser.get(ACTIVATE)
    refused = browser.post(ACTIVATE, {"code": "000000"})
    assert refused.status_code == 200 and refused.context["form"].errors
    assert not Authenticator.objects.filter(user=end_user).exists()
    assert amr_of(browser, end_user) == ["pwd"]


def test_an_old_password_sign_in_sets_nothing_up_without_confirming_first(end_user):
    browser, _ = log_in("enduser")
    _age_the_sign_in(browser, 3600)
    page = browser.get(ACTIVATE)
    assert page.status_code == 302 and page["Location"].startswith("/accounts/reauthenticate/")
    # Straight to the form, with a code of a secret of the attacker's choosing: refused the same way.
    session = browser.session
    session["mfa.totp.secret"] = secret = pyotp.random_base32()
    session.save()
    posted = browser.post(ACTIVATE, {"code": pyotp.TOTP(secret).now()})
    assert posted.status_code == 302 and posted["Location"].startswith("/accounts/reauthenticate/")
    assert not Authenticator.objects.filter(user=end_user).exists()
    assert browser.get(RECOVERY_CODES).status_code == 404  # no codes either


def test_another_session_of_the_account_still_confirms_with_the_factor(end_user):
    client = make_client(end_user, approve=True).client
    other, _ = log_in("enduser")  # signed in with the password alone, before the factor existed
    browser, _ = log_in("enduser")
    totp_activate(browser)
    codes = other.get(RECOVERY_CODES)
    assert codes.status_code == 302 and codes["Location"].startswith("/accounts/2fa/reauthenticate/")
    stale = other.post(secret_path(client))
    assert stale.status_code == 302 and stale["Location"].startswith("/accounts/2fa/reauthenticate/")
    assert client.secrets.count() == 1
    assert amr_of(other, end_user) == ["pwd"]


@override_settings(OAUTH_STAFF_MFA_REQUIRED=True)
def test_a_staff_session_that_set_up_its_factor_opens_the_admin_and_no_other_does(reviewer):
    other, _ = log_in("reviewer")
    browser, _ = log_in("reviewer")
    totp_activate(browser)
    assert browser.get("/admin/").status_code == 200
    refused = other.get("/admin/")
    assert refused.status_code == 302 and refused["Location"].startswith("/accounts/2fa/reauthenticate/")


def test_only_a_recent_session_of_the_same_user_gains_from_a_factor_set_up(end_user):
    totp = TOTP.activate(end_user, pyotp.random_base32()).instance
    codes = RecoveryCodes.activate(end_user).instance

    def session_of(user, *, age: int = 0):
        request = RequestFactory().post(ACTIVATE)
        request.session, request.user = SessionStore(), user
        record_authentication(request, user, "password")
        records = request.session["account_authentication_methods"]
        request.session["account_authentication_methods"] = [{**r, "at": r["at"] - age} for r in records]
        return request

    old = session_of(end_user, age=3600)
    assert not session_factor_set_up_record(request=old, user=end_user, authenticator=totp)
    assert session_amr(request=old) == ["pwd"]
    someone_else = session_of(make_user("someone"))
    assert not session_factor_set_up_record(request=someone_else, user=end_user, authenticator=totp)
    fresh = session_of(end_user)
    assert not session_factor_set_up_record(request=fresh, user=end_user, authenticator=codes)  # generated, not proved
    assert session_amr(request=fresh) == ["pwd"]
    assert session_factor_set_up_record(request=fresh, user=end_user, authenticator=totp)
    assert session_amr(request=fresh) == ["mfa", "otp", "pwd"]


# --- passkeys: the same path (allauth's AddWebAuthnView leads a first one on to the codes) ----------


def test_after_adding_a_first_passkey_the_recovery_codes_show_at_once(end_user):
    browser, _ = log_in("enduser")
    assert browser.get(ADD_PASSKEY).status_code == 200
    added = browser.post(ADD_PASSKEY, {"name": "Laptop", "credential": json.dumps(passkey_registration(browser))})
    assert added.status_code == 302 and added["Location"] == RECOVERY_CODES, added.content[:500]
    assert Authenticator.objects.filter(user=end_user, type=Authenticator.Type.WEBAUTHN).count() == 1
    codes = browser.get(RECOVERY_CODES)
    assert codes.status_code == 200, codes.get("Location")
    unused = recovery_codes_of(end_user)
    assert unused and all(code in codes.content.decode() for code in unused)
    assert amr_of(browser, end_user) == ["hwk", "mfa", "pwd"]


def test_a_registration_answering_another_challenge_adds_and_proves_nothing(end_user):
    browser, _ = log_in("enduser")
    browser.get(ADD_PASSKEY)
    forged = passkey_registration(browser, challenge=websafe_encode(os.urandom(32)))
    refused = browser.post(ADD_PASSKEY, {"name": "Laptop", "credential": json.dumps(forged)})
    assert refused.status_code == 200 and refused.context["form"].errors
    assert not Authenticator.objects.filter(user=end_user).exists()
    assert amr_of(browser, end_user) == ["pwd"]


# --- the code typed at set-up is used up (RFC 6238 §5.2) ----------------------------------------------


@pytest.fixture
def activated_with_a_code(end_user, settings):
    """The end user's authenticator app set up through the page with code C (this period's); a fresh
    code is the next period's, which allauth accepts with a tolerance of one period (as
    tests/accounts/test_recent_login_doors.py's stale_admin does), so that nothing waits 30 s.
    allauth counts confirmations per user id in the in-process cache, and ids come again from test to
    test: each test starts from none."""
    settings.MFA_TOTP_TOLERANCE = 1
    cache.clear()
    browser, _ = log_in("enduser")
    secret = browser.get(ACTIVATE).context["form"].secret
    now = time.time()
    code, fresh = pyotp.TOTP(secret).at(now), pyotp.TOTP(secret).at(now + 30)
    assert code != fresh
    done = browser.post(ACTIVATE, {"code": code})
    assert done.status_code == 302 and done["Location"] == RECOVERY_CODES
    return browser, code, fresh


def test_the_code_typed_at_set_up_does_not_confirm_a_re_authentication_again(end_user, activated_with_a_code):
    browser, code, fresh = activated_with_a_code
    client = make_client(end_user, approve=True).client
    _age_the_sign_in(browser, 3600)
    stale = browser.post(secret_path(client))
    assert stale.status_code == 302 and stale["Location"].startswith("/accounts/2fa/reauthenticate/")
    again = browser.post("/accounts/2fa/reauthenticate/", {"code": code, "next": secret_path(client)})
    assert again.status_code == 200 and again.context["form"].errors
    assert client.secrets.count() == 1
    confirmed = browser.post("/accounts/2fa/reauthenticate/", {"code": fresh, "next": secret_path(client)})
    assert confirmed.status_code in (302, 303), confirmed.content[:500]
    assert client.secrets.count() == 2  # allauth replayed the POST it kept


def test_the_code_typed_at_set_up_does_not_pass_a_new_logins_second_step(end_user, activated_with_a_code):
    _browser, code, fresh = activated_with_a_code
    browser, answer = log_in("enduser")
    assert answer["Location"].startswith("/accounts/2fa/authenticate/")
    refused = second_step(browser, code)
    assert refused.status_code == 200 and refused.context["form"].errors
    assert "_auth_user_id" not in browser.session
    assert second_step(browser, fresh).status_code == 302 and "_auth_user_id" in browser.session


# --- and says so: the code was used, wait for the next (not "Incorrect code") -----------------------

USED = "This code was already used. Wait for your authenticator app to show the next one"


def code_errors(response) -> list[str]:
    return response.context["form"].errors.get("code", [])


def test_the_code_typed_at_set_up_is_said_to_be_used_at_the_next_sign_in(end_user, activated_with_a_code):
    _browser, code, fresh = activated_with_a_code
    browser, _ = log_in("enduser")
    refused = second_step(browser, code)
    (error,) = code_errors(refused)
    assert error.startswith(USED) and "every 30 seconds" in error
    assert "Incorrect code" not in refused.content.decode() and USED in refused.content.decode()
    # A wrong code is still just incorrect: the message tells nothing about codes never used.
    wrong = f"{(int(fresh) + 1) % 1_000_000:06d}"
    assert code_errors(second_step(browser, wrong)) == ["Incorrect code."]
    assert second_step(browser, fresh).status_code == 302 and "_auth_user_id" in browser.session


def test_a_confirmation_says_the_same(end_user, activated_with_a_code):
    browser, code, _fresh = activated_with_a_code
    client = make_client(end_user, approve=True).client
    _age_the_sign_in(browser, 3600)
    again = browser.post("/accounts/2fa/reauthenticate/", {"code": code, "next": secret_path(client)})
    (error,) = code_errors(again)
    assert error.startswith(USED)
