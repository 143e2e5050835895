"""Organizations' domains (`identityprovider add --enforce`): the provider is the only way in for
their people; superusers keep a password-and-second-factor way in, audited; an upstream sign-in
that reports a second factor counts as two (docs/accounts.md, "The domain rule", "The staff rule")."""

from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.socialaccount.models import SocialAccount, SocialLogin
from django.test import Client

from accounts.models import AccountAuditAction, AccountAuditEvent
from tests.accounts.helpers import log_in, totp_activate
from tests.accounts.test_identity_providers import SECRET, run

AUTHORIZE = "https://sso.acme.example/authorize"


@pytest.fixture
def upstream_config(monkeypatch):
    # The provider's discovery document, as if fetched (no network here).
    from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter

    config = {
        "issuer": "https://sso.acme.example",
        "authorization_endpoint": AUTHORIZE,
        "token_endpoint": "https://sso.acme.example/token",
    }
    monkeypatch.setattr(OpenIDConnectOAuth2Adapter, "openid_config", property(lambda self: config))


def acme_provider(*, enforce: bool):
    args = ["add", "--name", "Acme SSO", "--issuer", "https://sso.acme.example", "--client-id", "sched"]
    args += ["--domain", "acme.example"] + (["--enforce"] if enforce else [])
    return run(*args, stdin=SECRET + "\n")


@pytest.fixture
def wile(db, django_user_model):
    """A person of acme.example, who proved their address there (an address nobody proved enforces
    nothing: tests/accounts/test_enforced_accounts.py)."""
    from allauth.account.models import EmailAddress

    user = django_user_model.objects.create_user(username="wile", email="wile@acme.example", password="x" * 20)
    EmailAddress.objects.create(user=user, email="wile@acme.example", verified=True, primary=True)
    return user


@pytest.mark.parametrize("enforce", [True, False])
def test_password_login_of_an_enforced_account_is_refused_naming_the_provider(wile, enforce):
    acme_provider(enforce=enforce)
    browser, answer = log_in("wile", "x" * 20)
    if enforce:
        assert answer.status_code == 200
        assert "Your organization signs you in through Acme SSO" in answer.content.decode()
        assert "_auth_user_id" not in browser.session
    else:
        assert answer.status_code == 302 and "_auth_user_id" in browser.session


def test_a_wrong_password_says_only_that(wile):
    # The provider is named after the password is right, never to someone guessing usernames.
    acme_provider(enforce=True)
    browser, answer = log_in("wile", "wrong password here")
    assert "signs you in through" not in answer.content.decode()
    assert "_auth_user_id" not in browser.session


@pytest.mark.parametrize("identifier", ["wile@acme.example", "nobody-yet@ACME.example"])
def test_typing_an_email_of_an_enforced_domain_goes_straight_to_the_provider(db, upstream_config, identifier):
    acme_provider(enforce=True)
    answer = Client().post("/accounts/login/", {"login": identifier, "password": "", "next": "/settings/apps/"})
    assert answer.status_code == 302
    target = urlsplit(answer["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == AUTHORIZE
    query = parse_qs(target.query)
    assert query["client_id"] == ["sched"] and query["login_hint"] == [identifier]
    assert query["redirect_uri"] == ["http://testserver/accounts/oidc/acme-sso/login/callback/"]


def test_an_unreachable_provider_is_a_page_not_an_error(db):
    # No discovery document (nothing answers at sso.acme.example here): a 502 page naming it.
    acme_provider(enforce=True)
    answer = Client().post("/accounts/login/", {"login": "wile@acme.example", "password": ""})
    assert answer.status_code == 502 and "Acme SSO" in answer.content.decode()


def test_an_email_of_another_domain_is_a_password_login(db, upstream_config, django_user_model):
    acme_provider(enforce=True)
    django_user_model.objects.create_user(username="road", email="road@runner.example", password="x" * 20)
    browser, answer = log_in("road@runner.example", "x" * 20)
    assert answer.status_code == 302 and "_auth_user_id" in browser.session


def test_a_superuser_keeps_a_password_and_second_factor_way_in_audited(wile):
    acme_provider(enforce=True)
    wile.is_staff = wile.is_superuser = True
    wile.save()
    # Without a second factor: refused like everyone of the domain.
    browser, answer = log_in("wile", "x" * 20)
    assert "Your organization signs you in through Acme SSO" in answer.content.decode()
    # With one (set up earlier): the password is accepted and the second factor asked next.
    wile.is_superuser = False
    wile.save()
    acme_provider_off = Client()
    acme_provider_off.force_login(wile)
    totp_activate(acme_provider_off)
    wile.is_superuser = True
    wile.save()
    browser, answer = log_in("wile", "x" * 20)
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/2fa/authenticate/")
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.SUPERUSER_PASSWORD_LOGIN, user=wile).exists()


def _record_request(rf, user, provider: str, uid: str):
    from allauth.account.internal.flows.login import AUTHENTICATION_METHODS_SESSION_KEY, record_authentication

    request = rf.get("/")
    request.session = Client().session
    record_authentication(request, user, "socialaccount", provider=provider, uid=uid)  # allauth's, as at login
    assert request.session[AUTHENTICATION_METHODS_SESSION_KEY][-1]["method"] == "socialaccount"
    return request


@pytest.mark.parametrize(
    ("upstream_amr", "counts_as_mfa"),
    [
        (["pwd", "mfa"], True),
        (["pwd", "otp"], True),
        (["hwk"], True),
        (["pwd"], False),
        (["face"], False),
        (None, False),
    ],
)
def test_an_upstream_second_factor_is_copied_into_the_session_record(rf, upstream_amr, counts_as_mfa, wile):
    from accounts.adapter import record_upstream_amr
    from accounts.selectors import session_amr

    claims = {"sub": "sub-1"} | ({"amr": upstream_amr} if upstream_amr is not None else {})
    # Saved, as allauth has saved the link by the time it records the sign-in: a record whose link
    # is gone no longer counts (accounts.selectors._records).
    login = SocialLogin(
        user=wile,
        account=SocialAccount.objects.create(
            user=wile, provider="acme-sso", uid="sub-1", extra_data={"id_token": claims}
        ),
    )
    request = _record_request(rf, wile, "acme-sso", "sub-1")
    record_upstream_amr(request, login)
    request.user = wile
    amr = session_amr(request=request)
    assert "fed" in amr and ("mfa" in amr) is counts_as_mfa


def test_an_upstream_only_account_re_authenticates_at_its_provider(wile):
    from accounts.middleware import reauthentication_url

    acme_provider(enforce=True)
    SocialAccount.objects.create(user=wile, provider="acme-sso", uid="sub-1")
    target = urlsplit(reauthentication_url(wile))
    assert target.path == "/accounts/oidc/acme-sso/login/"
    assert parse_qs(parse_qs(target.query)["auth_params"][0]) == {"prompt": ["login"], "max_age": ["0"]}
    # Released by an administrator (link and proved address gone), with a password: the password
    # page (the failure side of the same rule).
    SocialAccount.objects.filter(user=wile).delete()
    wile.emailaddress_set.all().delete()
    assert reauthentication_url(wile) == "/accounts/reauthenticate/"


@pytest.mark.parametrize(
    ("superuser", "enforce", "refused"), [(False, True, True), (False, False, False), (True, True, True)]
)
def test_a_passkey_is_no_way_around_the_enforced_provider(wile, rf, superuser, enforce, refused):
    # allauth calls pre_login for every sign-in; a passkey's carries no sociallogin. A superuser
    # without a second factor is refused too (with one, tests above: the password way in).
    from accounts.adapter import AccountAdapter

    acme_provider(enforce=enforce)
    wile.is_superuser = superuser
    wile.save()
    request = rf.post("/accounts/2fa/login/webauthn/")
    request.session = Client().session
    answer = AccountAdapter(request).pre_login(
        request, wile, email_verification="optional", signal_kwargs=None, email=None, signup=False, redirect_url=None
    )
    assert (answer is not None and answer.status_code == 403) is refused
    if refused:
        assert "Your organization signs you in through Acme SSO" in answer.content.decode()
