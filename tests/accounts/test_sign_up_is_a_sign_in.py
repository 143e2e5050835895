"""A sign-up is a fresh sign-in with the password just chosen (accounts.adapter.AccountAdapter.post_login):
setting up a second factor seconds later asks for nothing more, as docs/accounts.md says (only an
older sign-in is asked), and the session's `amr` says `pwd`. It ages like any sign-in."""

import re

import pytest
from allauth.account.internal.flows.login import AUTHENTICATION_METHODS_SESSION_KEY
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.core import mail
from django.core.cache import cache
from django.test import Client, RequestFactory

from accounts.adapter import AccountAdapter
from accounts.selectors import session_amr
from tests.accounts.test_second_factors import _age_the_sign_in

PASSWORD = "a-passphrase-nobody-guesses-41"


@pytest.fixture
def signed_up(db, settings):
    settings.OAUTH_SIGNUP = "open"
    cache.clear()  # allauth's limit of one verification mail per address per 3 minutes starts over
    browser = Client()
    response = browser.post(
        "/accounts/signup/",
        {"username": "newbie", "email": "newbie@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302, response.content[:500]
    user = get_user_model().objects.get(username="newbie")
    # The link mailed at sign-up, followed (allauth sets up no second factor on an unproven address).
    confirm = re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+)", mail.outbox[-1].body)[1]
    assert browser.post(confirm).status_code == 302
    assert EmailAddress.objects.get(user=user).verified
    return browser, user


def amr_of(browser, user) -> list[str]:
    request = RequestFactory().get("/")
    request.session, request.user = browser.session, user
    return session_amr(request=request)


@pytest.mark.parametrize("path", ["/accounts/2fa/totp/activate/", "/accounts/2fa/webauthn/add/"])
def test_right_after_sign_up_setting_up_a_second_factor_asks_for_nothing(signed_up, path):
    browser, _user = signed_up
    page = browser.get(path)
    assert page.status_code == 200, page.get("Location")


def test_the_sign_up_is_a_password_sign_in(signed_up):
    browser, user = signed_up
    assert amr_of(browser, user) == ["pwd"]
    (record,) = browser.session[AUTHENTICATION_METHODS_SESSION_KEY]
    assert record["method"] == "password" and record["signup"] is True


def test_an_older_sign_up_is_asked_to_confirm(signed_up):
    browser, _user = signed_up
    _age_the_sign_in(browser, 3600)
    page = browser.get("/accounts/2fa/totp/activate/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/reauthenticate/")


def _post_login(user, **kwargs):
    request = RequestFactory().get("/")
    request.session, request.user = SessionStore(), user
    request._messages = FallbackStorage(request)
    kwargs = {"email_verification": "optional", "email": None, "redirect_url": None, **kwargs}
    AccountAdapter().post_login(request, user, **kwargs)
    return request.session.get(AUTHENTICATION_METHODS_SESSION_KEY) or []


def test_an_ordinary_login_and_an_upstream_sign_up_record_no_password_here(end_user):
    # A login records its own (allauth, before post_login); an upstream sign-up records the provider.
    assert _post_login(end_user, signup=False, signal_kwargs=None) == []
    assert _post_login(end_user, signup=True, signal_kwargs={"sociallogin": object()}) == []
    end_user.set_unusable_password()
    assert _post_login(end_user, signup=True, signal_kwargs=None) == []
