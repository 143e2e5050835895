"""An identity provider whose sealed client secret does not open (a wrong or missing
OAUTH_SIGNING_KEY_ENCRYPTION_KEY, or a stored value that is not a sealed one) made `/accounts/login/`
a 500 for everyone: accounts.socialadapter opened the secret while building the page's provider
list. A misconfiguration, but then nobody could sign in at all. Now the provider is not offered
(the page says it is unavailable), the reason is logged once and never the secret, a person of its
enforced domain gets a page that says so, and `check --deploy` (accounts.E001) and /readyz name it.
"""

import logging
from io import StringIO

import pytest
from allauth.socialaccount.models import SocialAccount
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client

from accounts import selectors
from accounts.models import IdentityProvider
from config.checks import identity_provider_secrets_open
from operations.readiness import readiness_forget
from tests.accounts.test_identity_providers import SECRET, run
from tests.factories import PASSWORD, make_user

WRONG = "another-key-encryption-key-of-enough-length"
OFFERED = b"/accounts/oidc/acme-sso/login/"
UNAVAILABLE = "Sign-in through Acme SSO is unavailable right now"


@pytest.fixture
def acme_sealed(db):
    """An enforcing provider for acme.example, its secret sealed under the test suite's key; no
    earlier log of it in this process."""
    run(
        "add",
        "--name",
        "Acme SSO",
        "--issuer",
        "https://sso.acme.example",
        "--client-id",
        "sched",
        "--domain",
        "acme.example",
        "--enforce",
        stdin=SECRET + "\n",
    )
    selectors._unopenable_logged.clear()
    readiness_forget()
    yield IdentityProvider.objects.get(slug="acme-sso")
    selectors._unopenable_logged.clear()
    readiness_forget()


def unopenable(settings, provider, how: str) -> None:
    if how == "wrong key":
        settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = WRONG
    elif how == "no key":
        settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = ""
    else:  # a stored value that is not a sealed one (a restore gone wrong, a hand edit)
        IdentityProvider.objects.filter(pk=provider.pk).update(client_secret_sealed="not-a-sealed-value")


HOW = ["wrong key", "no key", "not sealed"]


def test_with_the_right_key_the_provider_is_offered(acme_sealed):
    page = Client().get("/accounts/login/")
    assert page.status_code == 200 and OFFERED in page.content and UNAVAILABLE not in page.content.decode()
    assert identity_provider_secrets_open(databases=["default"]) == []


@pytest.mark.parametrize("how", HOW)
def test_the_login_page_renders_without_the_provider_and_says_so(acme_sealed, settings, caplog, how):
    unopenable(settings, acme_sealed, how)
    browser = Client(raise_request_exception=False)
    with caplog.at_level(logging.ERROR, logger="accounts.selectors"):
        first, second = browser.get("/accounts/login/"), browser.get("/accounts/login/")
    for page in (first, second):
        assert page.status_code == 200  # before: a 500, for everyone
        assert OFFERED not in page.content and UNAVAILABLE in page.content.decode()
    # Logged once, naming the provider and the setting; never the secret nor the sealed value.
    (record,) = [record for record in caplog.records if record.name == "accounts.selectors"]
    logged = record.getMessage()
    assert "acme-sso" in logged and "OAUTH_SIGNING_KEY_ENCRYPTION_KEY" in logged
    assert (
        SECRET not in caplog.text and acme_sealed.client_secret_sealed not in caplog.text and WRONG not in caplog.text
    )
    # A password still signs in.
    make_user("someone")
    signed_in = Client()
    assert signed_in.post("/accounts/login/", {"login": "someone", "password": PASSWORD}).status_code == 302
    assert "_auth_user_id" in signed_in.session


def test_an_address_of_its_enforced_domain_gets_a_page_saying_it_is_unavailable(acme_sealed, settings):
    unopenable(settings, acme_sealed, "wrong key")
    answer = Client(raise_request_exception=False).post("/accounts/login/", {"login": "ceo@acme.example"})
    assert answer.status_code == 503
    page = answer.content.decode()
    assert "Sign-in through Acme SSO is unavailable" in page and "Tell your administrator" in page


def test_its_sign_in_address_and_a_linked_accounts_pages_answer_without_a_500(acme_sealed, settings):
    person = make_user("employee")
    SocialAccount.objects.create(user=person, provider="acme-sso", uid="employee-1")
    unopenable(settings, acme_sealed, "wrong key")
    anonymous = Client(raise_request_exception=False)
    assert anonymous.post("/accounts/oidc/acme-sso/login/").status_code == 404  # allauth's, for a provider not offered
    assert anonymous.get("/accounts/oidc/acme-sso/login/callback/?state=s&code=c").status_code == 404
    browser = Client(raise_request_exception=False)
    browser.force_login(person)
    for path in ("/accounts/3rdparty/", "/accounts/security/"):
        assert browser.get(path).status_code == 200, path


@pytest.mark.parametrize("how", HOW)
def test_check_deploy_names_the_provider_whose_secret_does_not_open(acme_sealed, settings, how):
    unopenable(settings, acme_sealed, how)
    (error,) = identity_provider_secrets_open(databases=["default"])
    assert error.id == "accounts.E001" and "acme-sso" in error.msg and "OAUTH_SIGNING_KEY_ENCRYPTION_KEY" in error.msg
    assert SECRET not in error.msg and WRONG not in error.msg
    assert identity_provider_secrets_open() == []  # a database question: only with --database
    with pytest.raises(SystemCheckError, match=r"accounts\.E001.*acme-sso"):
        call_command("check", "--deploy", "--database", "default", "--tag", "security", stdout=StringIO())


def test_readyz_reports_it_and_stays_ready(acme_sealed, settings):
    # Everything else serves (passwords, passkeys, tokens): the process stays in the pool.
    assert Client().get("/readyz").json()["checks"]["identity_providers"] == "ok"
    readiness_forget()
    unopenable(settings, acme_sealed, "not sealed")
    answer = Client().get("/readyz")
    assert answer.status_code == 200 and answer.json()["status"] == "ready"
    problem = answer.json()["checks"]["identity_providers"]
    assert problem.startswith("identity provider acme-sso:") and "OAUTH_SIGNING_KEY_ENCRYPTION_KEY" in problem
