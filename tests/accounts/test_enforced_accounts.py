"""Which accounts an organization's enforced provider is the only way in for, and that they cannot
leave it themselves (docs/accounts.md, "Enforced domains"; issue 38's finding 5).

An account is enforced when it is linked to an enforcing provider or holds a *proved* address at
one of its domains. The red team's employee set a password, added and proved a personal address,
made it primary, removed the organization's address, then signed in with the password alone: each
of those steps is now refused (a page that says why, audited), and the link keeps the account
enforced whatever its addresses. An address merely typed into another account locks nothing.
The same through panva's oidc-provider: tests/accounts/test_upstream_sign_in.py.
"""

import re

import pytest
from allauth.account.internal.flows.login import AUTHENTICATION_METHODS_SESSION_KEY, record_authentication
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.core import mail
from django.test import Client

from accounts.adapter import AccountAdapter
from accounts.models import AccountAuditAction, AccountAuditEvent
from accounts.selectors import EnforcedStep, enforced_step_refusal, enforcing_provider_for_user
from tests.accounts.helpers import log_in, totp_activate
from tests.accounts.test_enforced_domains import acme_provider
from tests.factories import PASSWORD, make_user

REFUSED = "Your organization signs you in through Acme SSO"


@pytest.fixture
def enforced(db):
    acme_provider(enforce=True)


@pytest.fixture
def employee(enforced):
    """Made just in time by a sign-in through Acme SSO: linked, its address proved by the provider.
    (A password here for the steps below: one an administrator once set, say.)"""
    user = make_user("wile")
    user.email = "wile@acme.example"
    user.save()
    EmailAddress.objects.create(user=user, email="wile@acme.example", verified=True, primary=True)
    SocialAccount.objects.create(user=user, provider="acme-sso", uid="wile")
    return user


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_an_unproved_address_at_an_enforced_domain_locks_nothing(enforced, end_user):
    # Typed into the email page and never proved: the password still signs in.
    browser = signed_in(end_user)
    assert browser.post("/accounts/email/", {"action_add": "", "email": "boss@acme.example"}).status_code == 302
    assert not EmailAddress.objects.get(email="boss@acme.example").verified
    assert enforcing_provider_for_user(user=end_user) is None
    again, answer = log_in("enduser")
    assert answer.status_code == 302 and "_auth_user_id" in again.session
    # Proved (the link mailed to it), it does: the provider is then the way in.
    link = re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", mail.outbox[-1].body).group(1)
    Client().post(link)
    refused, answer = log_in("enduser")
    assert REFUSED in answer.content.decode() and "_auth_user_id" not in refused.session


def test_the_link_keeps_an_account_enforced_whatever_its_addresses(employee):
    # Even with no address of the organization left (say, the old rule let it go), the link holds.
    EmailAddress.objects.filter(user=employee).delete()
    EmailAddress.objects.create(user=employee, email="me@home.example", verified=True, primary=True)
    employee.email = "me@home.example"
    employee.save()
    for identifier in ("wile", "me@home.example"):
        browser, answer = log_in(identifier)
        assert REFUSED in answer.content.decode() and "_auth_user_id" not in browser.session
    # Until an administrator removes the link: the password is then a way in again.
    SocialAccount.objects.filter(user=employee).delete()
    browser, answer = log_in("wile")
    assert answer.status_code == 302 and "_auth_user_id" in browser.session


def test_a_proved_address_at_the_domain_enforces_an_account_without_a_link(enforced, end_user):
    EmailAddress.objects.create(user=end_user, email="enduser@acme.example", verified=True)
    browser, answer = log_in("enduser")
    assert REFUSED in answer.content.decode() and "_auth_user_id" not in browser.session


def test_each_step_that_would_free_the_account_is_refused_with_a_page_that_says_why(employee):
    browser = signed_in(employee)
    EmailAddress.objects.create(user=employee, email="me@home.example", verified=True)
    steps = {
        "set_password": browser.get("/accounts/password/change/"),
        "change_password": browser.post(
            "/accounts/password/change/",
            {"oldpassword": PASSWORD, "password1": "pw-new-" + PASSWORD, "password2": "pw-new-" + PASSWORD},
        ),
        "make_primary": browser.post("/accounts/email/", {"action_primary": "", "email": "me@home.example"}),
        "remove_address": browser.post("/accounts/email/", {"action_remove": "", "email": "wile@acme.example"}),
    }
    for name, answer in steps.items():
        assert answer.status_code == 403, name
        page = answer.content.decode()
        assert "Acme SSO" in page and "Only an administrator" in page, name
    employee.refresh_from_db()
    assert employee.check_password(PASSWORD)
    assert EmailAddress.objects.get(user=employee, email="wile@acme.example").primary
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.ENFORCED_STEP_REFUSED, user=employee).count() == 4
    # What frees nothing stays allowed: an unproved address removed, the organization's kept primary.
    EmailAddress.objects.create(user=employee, email="typo@home.example", verified=False)
    assert browser.post("/accounts/email/", {"action_remove": "", "email": "typo@home.example"}).status_code == 302
    assert not EmailAddress.objects.filter(email="typo@home.example").exists()
    assert browser.post("/accounts/email/", {"action_primary": "", "email": "wile@acme.example"}).status_code == 302


def test_a_reset_link_sets_no_password_on_an_enforced_account(employee):
    Client().post("/accounts/password/reset/", {"email": "wile@acme.example"})
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/key/\S+/)", mail.outbox[-1].body).group(1)
    browser = Client()
    form = browser.get(link, follow=True)
    answer = browser.post(
        form.redirect_chain[-1][0], {"password1": "pw-new-" + PASSWORD, "password2": "pw-new-" + PASSWORD}
    )
    assert answer.status_code == 403 and REFUSED in answer.content.decode()
    employee.refresh_from_db()
    assert employee.check_password(PASSWORD)


def test_everyone_else_is_free_to_take_each_step(employee, end_user):
    for step in EnforcedStep:
        assert enforced_step_refusal(user=end_user, step=step, email="enduser@example.com") is None
    # A superuser with a second factor keeps the break-glass way in, and its steps.
    employee.is_superuser = employee.is_staff = True
    employee.save()
    assert enforced_step_refusal(user=employee, step=EnforcedStep.SET_PASSWORD) is not None  # no factor yet
    totp_activate(signed_in(employee))
    for step in EnforcedStep:
        assert enforced_step_refusal(user=employee, step=step, email="wile@acme.example") is None


def test_the_superusers_break_glass_is_audited_at_each_use_by_password_or_passkey(employee, rf):
    employee.is_superuser = employee.is_staff = True
    employee.save()
    totp_activate(signed_in(employee))
    browser, answer = log_in("wile")
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/2fa/authenticate/")
    # A passkey sign-in: allauth records it (method "mfa", passwordless) before pre_login.
    request = rf.post("/accounts/2fa/login/webauthn/")
    request.session = Client().session
    record_authentication(request, employee, "mfa", type="webauthn", passwordless=True)
    assert request.session[AUTHENTICATION_METHODS_SESSION_KEY][-1]["method"] == "mfa"
    allowed = AccountAdapter(request).pre_login(
        request,
        employee,
        email_verification="optional",
        signal_kwargs=None,
        email=None,
        signup=False,
        redirect_url=None,
    )
    assert allowed is None
    uses = AccountAuditEvent.objects.filter(action=AccountAuditAction.SUPERUSER_PASSWORD_LOGIN, user=employee)
    assert sorted(event.detail["method"] for event in uses) == ["passkey", "password"]
