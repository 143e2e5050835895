"""Sign-up (OAUTH_SIGNUP=open) tells nobody which addresses have accounts (issue 38's finding 9).

It answered "A user is already registered with this email address" for an existing address and a
redirect for a new one. allauth's enumeration prevention answers both alike only with mandatory
verification: ACCOUNT_EMAIL_VERIFICATION is "mandatory", and a self sign-up signs in once it has
proved its address (accounts.stages); the owner of an existing address is mailed instead of a
second account being made. Accounts made otherwise (administrators, the admin's "add user",
`createsuperuser`, `seed_demo`) sign in as before, proved address or not (docs/accounts.md, "Sign-up").
"""

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.test import Client

from accounts.models import SelfSignup
from tests.accounts.helpers import log_in
from tests.factories import PASSWORD, make_user

NEW_PASSWORD = "an-entirely-new-passphrase-42"


@pytest.fixture
def signup_open(settings, db):
    settings.OAUTH_SIGNUP = "open"


def sign_up(username: str, email: str):
    browser = Client()
    form = {"username": username, "email": email, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    return browser, browser.post("/accounts/signup/", form, follow=True)


def confirmation_link(message) -> str:
    return re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", message.body).group(1)


def test_an_existing_address_and_a_new_one_get_the_same_answer(signup_open, end_user):
    _, taken = sign_up("someone", "EndUser@example.com")
    _, free = sign_up("newcomer", "newcomer@example.com")
    assert taken.redirect_chain == free.redirect_chain == [("/accounts/confirm-email/", 302)]
    assert taken.status_code == free.status_code == 200
    # The same page, but for the address it names (its CSRF token aside).
    pages = [
        re.sub(r'value="[^"]{40,}"', "", answer.content.decode().replace(address, "ADDRESS"))
        for answer, address in ((taken, "enduser@example.com"), (free, "newcomer@example.com"))
    ]
    assert pages[0] == pages[1] and "already" not in pages[0].lower()
    # No second account for the existing address; its owner is told by mail, the newcomer gets a link.
    User = get_user_model()
    assert not User.objects.filter(username="someone").exists()
    assert User.objects.filter(email__iexact="enduser@example.com").count() == 1
    to_owner, to_newcomer = sorted(mail.outbox, key=lambda message: message.to)
    assert to_owner.to == ["enduser@example.com"] and "/accounts/confirm-email/" not in to_owner.body
    assert to_newcomer.to == ["newcomer@example.com"] and confirmation_link(to_newcomer)


def test_a_self_sign_up_signs_in_once_it_has_proved_its_address(signup_open):
    # (allauth mails an address at most once every few minutes, across tests: an address of its own.)
    browser, answer = sign_up("prover", "prover@example.com")
    assert "_auth_user_id" not in browser.session  # not signed in by the sign-up
    newcomer = get_user_model().objects.get(username="prover")
    assert SelfSignup.objects.filter(user=newcomer).exists() and not newcomer.is_staff
    early, answer = log_in("prover", NEW_PASSWORD)
    assert "_auth_user_id" not in early.session
    assert answer.status_code == 302 and answer["Location"] == "/accounts/confirm-email/"
    Client().post(confirmation_link(mail.outbox[0]))
    proved, answer = log_in("prover", NEW_PASSWORD)
    assert answer.status_code == 302 and proved.session["_auth_user_id"] == str(newcomer.pk)


def test_accounts_made_otherwise_keep_signing_in_without_a_proved_address(db, settings):
    # seed_demo's cast (DEBUG on, its well-known passwords)...
    settings.DEBUG = True
    call_command("seed_demo", stdout=StringIO())
    settings.DEBUG = False
    # ... one made by an administrator on the admin's "add user" page...
    admin_client = Client()
    admin_client.force_login(get_user_model().objects.get(username="admin"))
    admin_client.post(
        "/admin/auth/user/add/",
        {"username": "added", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert get_user_model().objects.filter(username="added").exists()
    # ... by `createsuperuser`, and by code (the scheduling service's, the tests' factories).
    call_command("createsuperuser", "--noinput", "--username", "root", "--email", "root@example.com", stdout=StringIO())
    root = get_user_model().objects.get(username="root")
    root.set_password(NEW_PASSWORD)
    root.save()
    make_user("coded")
    logins = [
        ("admin", "admin-demo-password"),
        ("developer@example.com", "developer-demo-password"),
        ("enduser", "enduser-demo-password"),
        ("added", NEW_PASSWORD),
        ("root", NEW_PASSWORD),
        ("coded@example.com", PASSWORD),
    ]
    assert not SelfSignup.objects.exists()
    for identifier, password in logins:
        browser, answer = log_in(identifier, password)
        assert answer.status_code == 302, identifier
        assert answer["Location"] != "/accounts/confirm-email/", identifier
        assert "_auth_user_id" in browser.session or answer["Location"].startswith("/accounts/2fa/"), identifier


def test_an_account_made_otherwise_keeps_signing_in_after_its_email_page_made_an_unproved_row(end_user):
    # allauth's email page turns the bare User.email into an (unverified) address row.
    browser = Client()
    browser.force_login(end_user)
    assert browser.get("/accounts/email/").status_code == 200
    assert end_user.emailaddress_set.filter(verified=False).exists()
    again, answer = log_in("enduser")
    assert answer.status_code == 302 and "_auth_user_id" in again.session
