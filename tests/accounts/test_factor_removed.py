"""A session counts only the factors the account still has (accounts.selectors: the sign-in records
whose authenticator or upstream link is gone no longer count), and the page that removes the last
one says what follows (issue 38, "Also": an administrator signed in with their only passkey
removed it, the recovery codes went with it, and kept using the admin in that session with no
factor at all).

allauth announces a new or removed factor once its transaction commits, as in production: these
tests commit (transaction=True) rather than run inside the test's rolled-back transaction.
"""

import json
from types import SimpleNamespace

import pytest
from allauth.account.internal.flows.login import record_authentication
from allauth.mfa.models import Authenticator
from allauth.socialaccount.models import SocialAccount
from django.test import Client, RequestFactory

from accounts.selectors import login_is_recent, session_amr, session_has_second_factor
from tests.accounts.helpers import log_in, next_totp_code, passkey_registration, second_step, totp_activate

pytestmark = pytest.mark.django_db(transaction=True)

ADD_PASSKEY = "/accounts/2fa/webauthn/add/"
TOTP_OFF = "/accounts/2fa/totp/deactivate/"
LAST = "This is your last second factor."
ADMIN_CLOSES = "Administrators need a second factor: the admin closes to you at once"


@pytest.fixture
def staff_rule(settings):
    settings.OAUTH_STAFF_MFA_REQUIRED = True
    settings.MFA_TOTP_TOLERANCE = 1  # the code typed at set-up is used up: sign-ins type the next


def add_passkey(browser, name: str = "Laptop") -> Authenticator:
    assert browser.get(ADD_PASSKEY).status_code == 200
    added = browser.post(ADD_PASSKEY, {"name": name, "credential": json.dumps(passkey_registration(browser))})
    assert added.status_code == 302, added.content[:500]
    return Authenticator.objects.filter(type=Authenticator.Type.WEBAUTHN).latest("pk")


def remove_path(passkey) -> str:
    return f"/accounts/2fa/webauthn/keys/{passkey.pk}/remove/"


def closed_to(browser) -> bool:
    """Whether the admin sends this session to set up a second factor (the staff rule)."""
    answer = browser.get("/admin/")
    if answer.status_code == 200:
        return False
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/2fa/?next="), answer.get("Location")
    return True


def test_an_administrator_who_removes_their_only_passkey_loses_the_admin_in_that_session(reviewer, staff_rule):
    browser, _ = log_in("reviewer")
    passkey = add_passkey(browser)  # proved at set-up: the admin opens (tests/accounts/test_setting_up_a_factor.py)
    assert not closed_to(browser)
    page = browser.get(remove_path(passkey)).content.decode()
    assert LAST in page and ADMIN_CLOSES in page  # said before the removal, on the page that does it
    assert browser.post(remove_path(passkey)).status_code == 302
    assert not Authenticator.objects.filter(user=reviewer).exists()  # the recovery codes went with it
    # The attack: the admin, in the same session, with no factor left. Now sent to set one up.
    assert closed_to(browser)
    assert browser.get("/admin/auth/user/").status_code == 302


def test_a_session_signed_in_with_a_passkey_removed_elsewhere_loses_the_admin(reviewer, staff_rule):
    browser, _ = log_in("reviewer")
    passkey = add_passkey(browser)
    # Another session of the account, signed in with that passkey alone (allauth's passwordless
    # record: two factors in one, issue 29).
    other = Client()
    other.force_login(reviewer)
    session = other.session
    session.pop("account_authentication_methods", None)
    record_authentication(
        SimpleNamespace(session=session), reviewer, "mfa", type="webauthn", id=passkey.pk, passwordless=True
    )
    session.save()
    assert not closed_to(other)
    assert browser.post(remove_path(passkey)).status_code == 302
    assert closed_to(other)


def test_an_administrator_who_turns_off_their_only_authenticator_app_loses_the_admin(reviewer, staff_rule):
    browser, _ = log_in("reviewer")
    secret = totp_activate(browser)
    signed_in, answer = log_in("reviewer")
    assert answer["Location"].startswith("/accounts/2fa/authenticate/")
    second_step(signed_in, next_totp_code(secret))
    assert not closed_to(signed_in)
    page = signed_in.get(TOTP_OFF).content.decode()
    assert LAST in page and ADMIN_CLOSES in page
    assert signed_in.post(TOTP_OFF).status_code == 302
    assert closed_to(signed_in) and closed_to(browser)


def test_a_factor_left_keeps_the_session_and_the_page_says_nothing(reviewer, staff_rule):
    browser, _ = log_in("reviewer")
    laptop = add_passkey(browser, "Laptop")
    phone = add_passkey(browser, "Phone")
    page = browser.get(remove_path(laptop)).content.decode()
    assert "Remove the passkey “Laptop”?" in page and LAST not in page
    # The session proved the phone too (each set-up counts): removing the laptop leaves it a factor.
    assert browser.post(remove_path(laptop)).status_code == 302
    assert not closed_to(browser)
    assert LAST in browser.get(remove_path(phone)).content.decode()


def test_an_end_user_is_told_the_recovery_codes_go_but_nothing_about_the_admin(end_user, staff_rule):
    browser, _ = log_in("enduser")
    passkey = add_passkey(browser)
    page = browser.get(remove_path(passkey)).content.decode()
    assert LAST in page and "recovery codes" in page and ADMIN_CLOSES not in page


def _request(session, user):
    request = RequestFactory().get("/")
    request.session, request.user = session, user
    return request


def test_records_count_only_factors_still_held(reviewer):
    """The rule itself, for each kind of record: a second factor by its authenticator's id, an
    upstream sign-in by its link; the password's record stands."""
    session = Client().session
    shape = SimpleNamespace(session=session)
    totp = Authenticator.objects.create(user=reviewer, type=Authenticator.Type.TOTP, data={})
    link = SocialAccount.objects.create(user=reviewer, provider="acme", uid="sub-1", extra_data={})
    record_authentication(shape, reviewer, "password")
    record_authentication(shape, reviewer, "mfa", type="totp", id=totp.pk)
    record_authentication(shape, reviewer, "socialaccount", provider="acme", uid="sub-1")
    session["account_authentication_methods"][-1]["upstream_mfa"] = True
    request = _request(session, reviewer)
    assert session_amr(request=request) == ["fed", "mfa", "otp", "pwd"]
    totp.delete()
    assert session_amr(request=request) == ["fed", "mfa", "pwd"]  # the provider's factor, still linked
    assert session_has_second_factor(request=request)
    link.delete()
    assert session_amr(request=request) == ["pwd"]
    assert not session_has_second_factor(request=request)
    assert login_is_recent(request=request)  # no factor left: a recent password sign-in is recent
