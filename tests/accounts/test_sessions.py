"""Sessions: "Sign out everywhere" is one button, and someone with a second factor cannot confirm a
sensitive change with the password alone, not even by posting it straight to allauth's form
(SECURITY.md, "Accounts and the login"). A password reset or change ending the other sessions is
proved in test_login_and_recovery.py."""

from allauth.mfa.models import Authenticator

from accounts.models import AccountAuditAction, AccountAuditEvent
from tests.accounts.helpers import log_in, next_totp_code, second_step, totp_activate
from tests.accounts.test_second_factors import _age_the_sign_in, signed_in
from tests.factories import PASSWORD


def test_sign_out_everywhere_ends_every_session_of_the_account(end_user, django_user_model):
    phone, _ = log_in("enduser")
    laptop, _ = log_in("enduser")
    someone_else = django_user_model.objects.create_user(username="other", password=PASSWORD)
    other, _ = log_in(someone_else.username)
    assert "Sign out everywhere" in laptop.get("/accounts/security/").content.decode()
    answer = laptop.post("/accounts/security/sign-out-everywhere/")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    assert not signed_in(laptop) and laptop.get("/settings/apps/").status_code == 302
    assert phone.get("/settings/apps/").status_code == 302  # the other device too
    assert other.get("/settings/apps/").status_code == 200  # nobody else's
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.SIGNED_OUT_EVERYWHERE, user=end_user).exists()


def test_sign_out_everywhere_is_a_post(end_user):
    browser, _ = log_in("enduser")
    assert browser.get("/accounts/security/sign-out-everywhere/").status_code == 405
    assert signed_in(browser)


def test_a_password_posted_to_the_re_authentication_form_does_not_stand_for_the_second_factor(end_user, settings):
    settings.MFA_TOTP_TOLERANCE = 1  # the code typed at set-up is used up: the sign-in types the next
    browser, _ = log_in("enduser")
    secret = totp_activate(browser)
    browser.post("/accounts/logout/")
    browser, _ = log_in("enduser")
    second_step(browser, next_totp_code(secret))
    _age_the_sign_in(browser, 3600)
    # Straight to allauth's password form, with the right password: sent to the second factor.
    answer = browser.post("/accounts/reauthenticate/", {"password": PASSWORD, "next": "/accounts/2fa/totp/deactivate/"})
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/2fa/reauthenticate/")
    # And it did not count: turning the factor off still asks for it.
    off = browser.post("/accounts/2fa/totp/deactivate/")
    assert off.status_code == 302 and off["Location"].startswith("/accounts/2fa/reauthenticate/")
    assert Authenticator.objects.filter(user=end_user, type=Authenticator.Type.TOTP).exists()


def test_without_a_second_factor_the_password_re_authenticates(end_user):
    browser, _ = log_in("enduser")
    _age_the_sign_in(browser, 3600)
    answer = browser.post("/accounts/reauthenticate/", {"password": PASSWORD, "next": "/accounts/2fa/"})
    assert answer.status_code == 302 and answer["Location"] == "/accounts/2fa/"


def test_the_admin_never_shows_a_session_key(end_user, reviewer):
    # allauth.usersessions' admin (its model's key is not editable): pinned, since the key would be
    # enough to take the session over.
    from allauth.usersessions.models import UserSession
    from django.test import Client

    log_in("enduser")
    session = UserSession.objects.get(user=end_user)
    admin = Client()
    admin.force_login(reviewer)
    listing = admin.get("/admin/usersessions/usersession/")
    page = admin.get(f"/admin/usersessions/usersession/{session.pk}/change/")
    assert listing.status_code == 200 and page.status_code == 200
    assert session.session_key not in listing.content.decode() + page.content.decode()
