"""Upstream identity providers: `manage.py identityprovider`, the sealed secret, the login page's
"Continue with NAME", and the nOAuth rule (SECURITY.md, "Accounts and the login")."""

import json
from io import StringIO

import pytest
from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.models import SocialLogin
from allauth.socialaccount.providers.base import ProviderException
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from accounts.models import AccountAuditAction, AccountAuditEvent, IdentityProvider
from accounts.socialadapter import SocialAccountAdapter
from accounts.upstream import upstream_nonce
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
    """What allauth hands pre_social_login after a sign-in at `provider`: its state (the PKCE
    verifier) and the ID token, carrying the nonce derived from it (accounts.upstream)."""
    from allauth.account.models import EmailAddress
    from allauth.socialaccount.models import SocialAccount
    from django.contrib.auth import get_user_model

    from accounts.upstream import upstream_nonce

    user = get_user_model()(email=email, username="")
    id_token = {"sub": "sub-123", "email": email, "email_verified": verified, "nonce": upstream_nonce("v" * 43)}
    account = SocialAccount(provider=provider, uid="sub-123", extra_data={"id_token": id_token})
    login = SocialLogin(user=user, account=account)
    login.state = {"process": "login", "pkce_code_verifier": "v" * 43}
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
    from allauth.account.models import EmailAddress

    from accounts.socialadapter import SocialAccountAdapter

    person = django_user_model.objects.create_user(username="wile", email="wile@acme.example", password="x" * 20)
    EmailAddress.objects.create(user=person, email="wile@acme.example", verified=True, primary=True)
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


@pytest.mark.parametrize(
    "nonce",
    [
        "another-sign-ins-nonce",  # an ID token from another sign-in (a replay, an injected code)
        None,  # none at all
    ],
)
def test_an_id_token_that_does_not_answer_this_sign_ins_nonce_is_refused(acme, rf, nonce):
    # OpenID Connect Core §3.1.3.7 item 11. allauth's callback view turns the refusal into its
    # "sign-in failed" page; the end-to-end sign-in with the nonce answered:
    # tests/accounts/test_upstream_sign_in.py.
    login = _upstream_login("new@acme.example", True)
    login.account.extra_data["id_token"]["nonce"] = nonce
    request = rf.get("/")
    with pytest.raises(PermissionDenied):
        SocialAccountAdapter(request).pre_social_login(request, login)
    # The same ID token for a sign-in whose state has no PKCE verifier: refused too.
    login = _upstream_login("new@acme.example", True)
    login.state = {"process": "login"}
    with pytest.raises(PermissionDenied):
        SocialAccountAdapter(request).pre_social_login(request, login)


@pytest.mark.parametrize(
    ("response", "refused"),
    [
        ({"id_token": {"sub": "a"}, "userinfo": {"sub": "a"}}, False),
        ({"id_token": {"sub": "a"}}, False),
        ({"id_token": {"sub": "a"}, "userinfo": {"sub": "b"}}, True),  # OpenID Connect Core §5.3.2
        ({"id_token": {"sub": "a"}, "userinfo": {}}, True),
        ({"userinfo": {"sub": "a"}}, True),  # no ID token: no OpenID Connect sign-in
    ],
)
def test_the_upstream_sign_in_takes_one_subject_from_the_id_token(acme, rf, response, refused):
    request = rf.get("/")
    request.session = Client().session
    provider = get_adapter().get_provider(request, "acme-sso")
    assert type(provider).__name__ == "UpstreamProvider"  # SOCIALACCOUNT_PROVIDERS' provider_class
    if refused:
        with pytest.raises(ProviderException):
            provider.sociallogin_from_response(request, response)
    else:
        assert provider.sociallogin_from_response(request, response).account.uid == "a"


def test_every_provider_asks_for_pkce_with_s256_and_a_nonce_derived_from_its_verifier(acme, rf):
    request = rf.get("/")
    provider = get_adapter().get_provider(request, "acme-sso")
    assert provider.app.settings["oauth_pkce_enabled"] is True
    params = provider.get_pkce_params()
    assert params["code_challenge_method"] == "S256" and params["nonce"] == upstream_nonce(params["code_verifier"])
    assert params["nonce"] != params["code_challenge"]


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
