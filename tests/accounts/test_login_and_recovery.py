"""Sign-in by username or email, sign-up off by default, password reset and email verification
(django-allauth; SECURITY.md, "Accounts and the login")."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.http import HttpResponse
from django.test import Client, RequestFactory, override_settings

from accounts.middleware import AccountMiddleware
from tests.factories import PASSWORD

NEW_PASSWORD = "an-entirely-new-passphrase-42"


def log_in(identifier, password=PASSWORD, browser=None):
    browser = browser or Client()
    return browser, browser.post("/accounts/login/", {"login": identifier, "password": password})


def signed_in(browser) -> bool:
    return "_auth_user_id" in browser.session


@pytest.mark.parametrize("identifier", ["enduser", "enduser@example.com", "EndUser@Example.com"])
def test_it_signs_in_by_username_or_email(end_user, identifier):
    browser, response = log_in(identifier)
    assert response.status_code == 302 and signed_in(browser)


def test_a_wrong_password_is_the_same_answer_for_a_username_and_an_email(end_user):
    for identifier in ("enduser", "enduser@example.com", "nobody@example.com"):
        browser, response = log_in(identifier, "wrong")
        assert response.status_code == 200 and not signed_in(browser)
        assert b"not correct" in response.content or b"incorrect" in response.content


def test_sign_up_is_off_by_default(db):
    response = Client().post(
        "/accounts/signup/",
        {"username": "newbie", "email": "newbie@example.com", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert b"Sign Up Closed" in response.content or b"closed" in response.content.lower()
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="newbie").exists()


@override_settings(OAUTH_SIGNUP="open")
def test_sign_up_when_open_makes_an_account(db):
    response = Client().post(
        "/accounts/signup/",
        {"username": "newbie", "email": "newbie@example.com", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.filter(username="newbie", is_staff=False).exists()


def _reset_link() -> str:
    (message,) = mail.outbox
    return re.search(r"https?://[^/\s]+(/accounts/password/reset/key/\S+/)", message.body).group(1)


def _reset(link: str, password=NEW_PASSWORD, browser=None):
    browser = browser or Client()
    form = browser.get(link, follow=True)
    return browser.post(
        form.redirect_chain[-1][0] if form.redirect_chain else link, {"password1": password, "password2": password}
    )


def test_password_reset_end_to_end_single_use(end_user):
    other_session, _ = log_in("enduser")
    assert signed_in(other_session)
    asked = Client().post("/accounts/password/reset/", {"email": "enduser@example.com"})
    assert asked.status_code == 302
    link = _reset_link()
    assert _reset(link).status_code == 302
    assert log_in("enduser", NEW_PASSWORD)[1].status_code == 302
    # The link worked once: the password it set is in its token, so it is spent.
    again = _reset(link, password="yet-another-passphrase-43")
    assert again.status_code == 200 and b"invalid" in again.content.lower()
    assert log_in("enduser", "yet-another-passphrase-43")[1].status_code == 200
    # The reset ended the account's other sessions.
    assert other_session.get("/settings/apps/").status_code == 302


def test_an_unknown_address_gets_the_same_answer_and_no_mail(end_user):
    known = Client().post("/accounts/password/reset/", {"email": "enduser@example.com"})
    unknown = Client().post("/accounts/password/reset/", {"email": "nobody@example.com"})
    assert (known.status_code, known["Location"]) == (unknown.status_code, unknown["Location"])
    assert [message.to for message in mail.outbox] == [["enduser@example.com"]]


@override_settings(PASSWORD_RESET_TIMEOUT=-1)
def test_a_reset_link_expires(end_user):
    Client().post("/accounts/password/reset/", {"email": "enduser@example.com"})
    response = _reset(_reset_link())
    assert response.status_code == 200 and b"invalid" in response.content.lower()
    assert log_in("enduser", NEW_PASSWORD)[1].status_code == 200


def test_a_password_change_ends_the_other_sessions_and_keeps_this_one(end_user):
    other_session, _ = log_in("enduser")
    this_session, _ = log_in("enduser")
    response = this_session.post(
        "/accounts/password/change/", {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    )
    assert response.status_code == 302
    assert this_session.get("/settings/apps/").status_code == 200
    assert other_session.get("/settings/apps/").status_code == 302


def test_email_verification_link_verifies_once(end_user):
    browser, _ = log_in("enduser")
    browser.post("/accounts/email/", {"action_send": "", "email": "enduser@example.com"})
    address = EmailAddress.objects.get(user=end_user, email="enduser@example.com")
    assert not address.verified
    (message,) = mail.outbox
    link = re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", message.body).group(1)
    assert Client().post(link).status_code == 302
    address.refresh_from_db()
    assert address.verified


def test_allauths_middleware_stays_off_the_machine_paths(db):
    seen = []

    def view(request):
        seen.append(hasattr(request, "allauth"))
        return HttpResponse()

    middleware = AccountMiddleware(view)
    for path in ("/v2/auth/oauth2/token", "/v2/auth/oauth2/introspect", "/v2/me", "/.well-known/jwks.json"):
        middleware(RequestFactory().post(path))
    middleware(RequestFactory().get("/accounts/login/"))
    assert seen == [False, False, False, False, True]


@pytest.mark.parametrize(
    ("next_url", "kept"),
    [
        ("/auth/oauth2/authorize?client_id=x&response_type=code", True),
        ("https://evil.example/auth/oauth2/authorize?client_id=x", False),
        ("/settings/apps/", False),
    ],
)
def test_a_reset_keeps_only_an_authorization_request_of_this_site(db, next_url, kept):
    from accounts.views import RESET_NEXT_SESSION_KEY

    browser = Client()
    browser.get("/accounts/password/reset/", {"next": next_url})
    assert (browser.session.get(RESET_NEXT_SESSION_KEY) == next_url) is kept
    done = browser.get("/accounts/password/reset/key/done/").content.decode()
    assert ("?next=/auth/oauth2/authorize%3Fclient_id%3Dx" in done) is kept
    assert RESET_NEXT_SESSION_KEY not in browser.session  # used once
