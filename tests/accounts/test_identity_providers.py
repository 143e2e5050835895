"""Upstream identity providers: `manage.py identityprovider`, the sealed secret, the login page's
"Continue with NAME", and the nOAuth rule (SECURITY.md, "Accounts and the login")."""

import json
from io import StringIO

import pytest
from allauth.socialaccount.models import SocialLogin
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from accounts.models import AccountAuditAction, AccountAuditEvent, IdentityProvider
from tests.security.test_storage import dumpdata_text

SECRET = "upstream-client-secret-0123456789abcdef"


def run(*args, stdin="") -> object:
    out = StringIO()
    call_command("identityprovider", *args, stdout=out, stdin=StringIO(stdin))
    return json.loads(out.getvalue())


@pytest.fixture
def acme(db):
    return run(
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


def test_add_reads_the_secret_from_stdin_and_prints_the_redirect_uri(acme):
    assert acme["redirect_uri"] == "http://testserver/accounts/oidc/acme-sso/login/callback/"
    assert acme["domains"] == ["acme.example"] and acme["enforce"] is True
    assert SECRET not in json.dumps(acme) and SECRET not in json.dumps(run("list"))
    stored = IdentityProvider.objects.get()
    assert stored.client_secret_sealed.count(".") == 4 and SECRET not in dumpdata_text()
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.IDENTITY_PROVIDER_ADDED).count() == 1


def test_the_secret_is_never_an_argument(db):
    with pytest.raises(CommandError):
        call_command(
            "identityprovider",
            "add",
            "--name",
            "X",
            "--issuer",
            "https://x.example",
            "--client-id",
            "c",
            "--client-secret",
            SECRET,
            stdout=StringIO(),
        )
    with pytest.raises(CommandError, match="no client secret"):
        run("add", "--name", "X", "--issuer", "https://x.example", "--client-id", "c", stdin="")


def test_remove(acme):
    assert run("remove", "acme-sso") == {"removed": "acme-sso"}
    assert run("list") == []


def test_the_login_page_offers_continue_with_name(acme):
    page = Client().get("/accounts/login/")
    assert b"Acme SSO" in page.content and b"/accounts/oidc/acme-sso/login/" in page.content


def _upstream_login(email: str, verified: bool, provider="acme-sso") -> SocialLogin:
    from allauth.account.models import EmailAddress
    from allauth.socialaccount.models import SocialAccount
    from django.contrib.auth import get_user_model

    user = get_user_model()(email=email, username="")
    login = SocialLogin(user=user, account=SocialAccount(provider=provider, uid="sub-123"))
    login.email_addresses = [EmailAddress(email=email, verified=verified, primary=True)]
    return login


@pytest.mark.parametrize(
    ("email", "verified"),
    [("reviewer@example.com", False), ("reviewer@example.com", True)],  # not a domain it is authoritative for
)
def test_an_email_of_an_existing_account_links_nothing_noauth(acme, reviewer, email, verified, rf):
    from allauth.core.exceptions import ImmediateHttpResponse

    from accounts.socialadapter import SocialAccountAdapter

    request = rf.get("/")
    with pytest.raises(ImmediateHttpResponse) as refused:
        SocialAccountAdapter(request).pre_social_login(request, _upstream_login(email, verified))
    assert refused.value.response.status_code == 403
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.UPSTREAM_LINK_REFUSED, user=reviewer).exists()


def test_an_authoritative_verified_email_links(acme, rf, django_user_model):
    from accounts.socialadapter import SocialAccountAdapter

    person = django_user_model.objects.create_user(username="wile", email="wile@acme.example", password="x" * 20)
    request = rf.get("/")
    request.session = {}
    login = _upstream_login("wile@acme.example", True)
    login.connect = lambda request, user: setattr(login, "linked_to", user)
    SocialAccountAdapter(request).pre_social_login(request, login)
    assert login.linked_to == person


def test_an_upstream_account_is_never_staff(acme, rf):
    from accounts.socialadapter import SocialAccountAdapter

    login = _upstream_login("new@acme.example", True)
    user = SocialAccountAdapter(rf.get("/")).populate_user(rf.get("/"), login, {"email": "new@acme.example"})
    assert user.is_staff is False and user.is_superuser is False


def _added(**options) -> tuple[dict, str]:
    out, err = StringIO(), StringIO()
    call_command(
        "identityprovider",
        *("add", "--name", "Acme SSO", "--issuer", "https://sso.acme.example", "--client-id", "sched"),
        stdout=out,
        stderr=err,
        stdin=StringIO(SECRET + "\n"),
    )
    return json.loads(out.getvalue()), err.getvalue()


@pytest.mark.django_db
def test_the_redirect_uri_printed_is_under_the_issuer_the_server_uses(settings):
    settings.OAUTH_ISSUER = "http://localhost:18200"
    shown, said = _added()
    assert shown["redirect_uri"] == "http://localhost:18200/accounts/oidc/acme-sso/login/callback/"
    assert said == ""


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("debug", "from_environment", "warned"),
    [(True, False, True), (True, True, False), (False, False, False)],
    ids=["debug-default-issuer", "issuer-set", "production"],
)
def test_with_debug_on_and_no_issuer_set_it_warns_that_the_uri_is_the_defaults(
    settings, debug, from_environment, warned
):
    settings.DEBUG, settings.OAUTH_ISSUER_FROM_ENVIRONMENT = debug, from_environment
    shown, said = _added()
    assert shown["redirect_uri"].startswith(settings.OAUTH_ISSUER + "/")  # stdout stays JSON
    assert ("OAUTH_ISSUER is not set" in said and 'make manage PORT=… ARGS="identityprovider list"' in said) is warned
    assert (settings.OAUTH_ISSUER in said) is warned
