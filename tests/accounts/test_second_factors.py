"""TOTP with single-use recovery codes, sealed at rest; the staff rule; recent sign-in before
sensitive actions; factor changes on the audit trail (SECURITY.md, "Accounts and the login")."""

import time
from io import StringIO

import pytest
from allauth.account.authentication import AUTHENTICATION_METHODS_SESSION_KEY
from allauth.mfa.models import Authenticator
from django.core.management import call_command
from django.test import Client, override_settings

from accounts.models import AccountAuditAction, AccountAuditEvent
from tests.accounts.helpers import (
    log_in,
    next_totp_code,
    recovery_codes_of,
    second_step,
    totp_activate,
    totp_secret_of,
)
from tests.factories import make_client, make_user


def signed_in(browser) -> bool:
    return "_auth_user_id" in browser.session


@pytest.fixture
def totp_user(end_user, django_capture_on_commit_callbacks, settings):
    settings.MFA_TOTP_TOLERANCE = 1  # the code typed at set-up is used up: sign-ins type the next (helpers)
    browser, _ = log_in("enduser")
    # allauth announces a new factor once its transaction commits; the audit row follows it.
    with django_capture_on_commit_callbacks(execute=True):
        secret = totp_activate(browser)
    return end_user, secret


def test_totp_set_up_then_a_login_asks_for_the_code(totp_user):
    user, secret = totp_user
    browser, response = log_in("enduser")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/2fa/authenticate/")
    assert not signed_in(browser)
    assert second_step(browser, "000000").status_code == 200 and not signed_in(browser)
    assert second_step(browser, next_totp_code(secret)).status_code == 302
    assert signed_in(browser)


def test_the_totp_secret_and_recovery_seed_are_sealed_at_rest(totp_user):
    user, secret = totp_user
    stored = Authenticator.objects.get(user=user, type=Authenticator.Type.TOTP).data
    assert secret not in str(stored) and stored["secret"].count(".") == 4  # a compact JWE
    assert totp_secret_of(user) == secret
    codes = Authenticator.objects.get(user=user, type=Authenticator.Type.RECOVERY_CODES).data
    assert "seed" in codes and codes["seed"].count(".") == 4
    assert not any(code in str(codes) for code in recovery_codes_of(user))


def test_a_recovery_code_works_once(totp_user):
    user, _secret = totp_user
    code = recovery_codes_of(user)[0]
    browser, _ = log_in("enduser")
    assert second_step(browser, code).status_code == 302 and signed_in(browser)
    again, _ = log_in("enduser")
    assert second_step(again, code).status_code == 200 and not signed_in(again)


def test_factor_changes_are_audited(totp_user):
    user, _secret = totp_user
    added = AccountAuditEvent.objects.filter(user=user, action=AccountAuditAction.SECOND_FACTOR_ADDED)
    assert sorted(event.detail["type"] for event in added) == ["recovery_codes", "totp"]
    assert all("secret" not in str(event.detail) for event in AccountAuditEvent.objects.all())


# --- the staff rule -------------------------------------------------------------------------------


@override_settings(OAUTH_STAFF_MFA_REQUIRED=True)
def test_a_staff_account_without_a_second_factor_cannot_open_the_admin(reviewer):
    browser, response = log_in("reviewer", next_url="/admin/")
    assert signed_in(browser)
    for path in ("/admin/", "/admin/oauthclients/oauthclient/"):
        refused = browser.get(path)
        assert refused.status_code == 302 and refused["Location"].startswith("/accounts/2fa/?next=")


@pytest.mark.django_db(transaction=True)  # allauth announces the new factor once its transaction commits
@override_settings(OAUTH_STAFF_MFA_REQUIRED=True, MFA_TOTP_TOLERANCE=1)
def test_a_staff_account_signed_in_with_its_second_factor_opens_the_admin(reviewer):
    browser, _ = log_in("reviewer")
    secret = totp_activate(browser)
    # The code typed to set the factor up proved it, in this session (tests/accounts/
    # test_setting_up_a_factor.py): the admin opens.
    assert browser.get("/admin/").status_code == 200
    # A later sign-in asks for it after the password, then opens the admin.
    fresh, response = log_in("reviewer")
    assert response["Location"].startswith("/accounts/2fa/authenticate/")
    time.sleep(0.01)
    second_step(fresh, next_totp_code(secret))  # the code typed at set-up is used up
    assert fresh.get("/admin/").status_code == 200


@override_settings(OAUTH_STAFF_MFA_REQUIRED=True)
def test_the_admins_own_login_page_is_the_one_login(reviewer):
    response = Client().get("/admin/login/?next=/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@override_settings(OAUTH_STAFF_MFA_REQUIRED=False)
def test_the_rule_off_lets_staff_in_and_check_deploy_says_so(reviewer, capsys):
    browser, _ = log_in("reviewer")
    assert browser.get("/admin/").status_code == 200
    from config.checks import staff_second_factor_required

    assert [warning.id for warning in staff_second_factor_required()] == ["accounts.W001"]
    with override_settings(OAUTH_STAFF_MFA_REQUIRED=True):
        assert staff_second_factor_required() == []


@override_settings(OAUTH_STAFF_MFA_REQUIRED=True)
def test_operators_approve_on_the_server_without_a_browser(owner, reviewer):
    client = make_client(owner).client
    call_command("oauthclient", "--actor", "reviewer", "approve", client.client_id, stdout=StringIO())
    client.refresh_from_db()
    assert client.status == "approved"


# --- recent sign-in before sensitive actions --------------------------------------------------------


def _age_the_sign_in(browser, seconds: int):
    session = browser.session
    session[AUTHENTICATION_METHODS_SESSION_KEY] = [
        {**record, "at": record["at"] - seconds} for record in session[AUTHENTICATION_METHODS_SESSION_KEY]
    ]
    session.save()


def test_a_new_secret_needs_a_recent_sign_in(owner):
    client = make_client(owner, approve=True).client
    browser, _ = log_in("owner")
    path = f"/settings/developer/clients/{client.client_id}/secrets/generate/"
    _age_the_sign_in(browser, 3600)
    stale = browser.post(path)
    assert stale.status_code == 302 and stale["Location"].startswith("/accounts/reauthenticate/?next=")
    assert client.secrets.count() == 1
    browser.post("/accounts/reauthenticate/", {"password": "correct-horse-battery-staple", "next": path})
    assert client.secrets.count() == 2  # allauth replayed the suspended POST


def test_someone_with_a_second_factor_re_authenticates_with_it(totp_user):
    user, secret = totp_user
    client = make_client(user, approve=True).client
    browser, _ = log_in("enduser")
    second_step(browser, next_totp_code(secret))
    path = f"/settings/developer/clients/{client.client_id}/secrets/generate/"
    _age_the_sign_in(browser, 3600)
    stale = browser.post(path)
    assert stale["Location"].startswith("/accounts/2fa/reauthenticate/?next=")
    # The password alone is not enough for them.
    by_password = browser.get("/accounts/reauthenticate/?next=" + path)
    assert by_password["Location"].startswith("/accounts/2fa/reauthenticate/")
    assert client.secrets.count() == 1


@override_settings(OAUTH_STAFF_MFA_REQUIRED=False)
def test_approving_needs_a_recent_sign_in(reviewer, owner):
    client = make_client(owner).client
    browser, _ = log_in("reviewer")
    _age_the_sign_in(browser, 3600)
    path = f"/admin/oauthclients/oauthclient/{client.pk}/approve/"
    stale = browser.post(path, {f"digest_{client.pk}": client.review_digest()})
    assert stale["Location"].startswith("/accounts/reauthenticate/?next=")
    client.refresh_from_db()
    assert client.status == "pending"


def test_an_end_users_password_sign_in_is_not_a_second_factor(end_user):
    make_user("staffer", staff=True)
    browser, _ = log_in("enduser")
    from django.test import RequestFactory

    from accounts.selectors import session_amr

    request = RequestFactory().get("/")
    request.session, request.user = browser.session, end_user
    assert session_amr(request=request) == ["pwd"]
