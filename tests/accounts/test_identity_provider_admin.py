"""The admin's identity providers: the secret typed once and never shown again, the redirect_uri
shown, every change audited and behind a recent sign-in (SECURITY.md, "Accounts and the login")."""

import pytest
from django.test import Client

from accounts.models import AccountAuditAction, AccountAuditEvent, IdentityProvider
from signing.keys import secret_open
from tests.factories import make_user

SECRET = "upstream-secret-typed-in-the-admin-0123"
ADD = "/admin/accounts/identityprovider/add/"


@pytest.fixture
def admin_browser(db):
    browser = Client()
    browser.force_login(make_user("root", staff=True))
    return browser


def _add(browser, **extra):
    data = {
        "name": "Acme SSO",
        "issuer": "https://sso.acme.example",
        "client_id": "sched",
        "client_secret": SECRET,
        "domains_text": "acme.example Example.ORG",
        "enforce": "on",
    } | extra
    return browser.post(ADD, data)


def test_add_seals_the_secret_shows_the_redirect_uri_and_never_the_secret(admin_browser):
    assert SECRET not in admin_browser.get(ADD).content.decode()
    answer = _add(admin_browser)
    assert answer.status_code == 302, answer.content[:800]
    provider = IdentityProvider.objects.get()
    assert secret_open(provider.client_secret_sealed) == SECRET
    assert provider.domains == ["acme.example", "example.org"] and provider.enforce
    change = admin_browser.get(f"/admin/accounts/identityprovider/{provider.pk}/change/").content.decode()
    assert "http://testserver/accounts/oidc/acme-sso/login/callback/" in change
    assert SECRET not in change and provider.client_secret_sealed not in change
    assert SECRET not in admin_browser.get("/admin/accounts/identityprovider/").content.decode()
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.IDENTITY_PROVIDER_ADDED).count() == 1


def test_a_failed_add_does_not_send_the_secret_back(admin_browser):
    answer = _add(admin_browser, issuer="not a url")
    assert answer.status_code == 200 and SECRET not in answer.content.decode()
    assert not IdentityProvider.objects.exists()


def test_change_keeps_the_secret_when_left_empty_and_never_the_issuer(admin_browser):
    _add(admin_browser)
    provider = IdentityProvider.objects.get()
    sealed = provider.client_secret_sealed
    url = f"/admin/accounts/identityprovider/{provider.pk}/change/"
    answer = admin_browser.post(
        url,
        {
            "name": "Acme SSO",
            "issuer": "https://evil.example",
            "client_id": "sched2",
            "client_secret": "",
            "domains_text": "",
        },
    )
    assert answer.status_code == 302, answer.content[:800]
    provider.refresh_from_db()
    assert provider.client_secret_sealed == sealed and provider.client_id == "sched2"
    assert provider.issuer == "https://sso.acme.example" and provider.domains == [] and not provider.enforce
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.IDENTITY_PROVIDER_CHANGED).count() == 1


def test_two_providers_of_one_name_are_a_form_error(admin_browser):
    _add(admin_browser)
    answer = _add(admin_browser, issuer="https://other.example")
    assert answer.status_code == 200 and "Another identity provider has this name." in answer.content.decode()


def test_delete_is_audited(admin_browser):
    _add(admin_browser)
    provider = IdentityProvider.objects.get()
    answer = admin_browser.post(f"/admin/accounts/identityprovider/{provider.pk}/delete/", {"post": "yes"})
    assert answer.status_code == 302 and not IdentityProvider.objects.exists()
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.IDENTITY_PROVIDER_REMOVED).count() == 1


def test_adding_needs_a_recent_sign_in(admin_browser, settings):
    settings.ACCOUNT_REAUTHENTICATION_TIMEOUT = -1  # the sign-in above is no longer recent
    answer = _add(admin_browser)
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/reauthenticate/")
    assert not IdentityProvider.objects.exists()
