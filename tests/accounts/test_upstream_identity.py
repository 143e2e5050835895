# ruff: noqa: F811 - fixtures imported from other modules are named as arguments
"""Who a person is (accounts.identity.upstream_person): the one rule both doors that take an
identity from an organization's provider follow, the sign-in through it (accounts.socialadapter)
and its identity assertions (ID-JAG, oauthflows.token.idjag). The link (provider, sub) first; an email only
when the upstream vouches for it (`email_verified` true, in the provider's domains) and an account
here proved it. The red team's finding: an ID-JAG with `email_verified: false` (or none) for
alice@acme.example got a token for alice; the sign-in door already refused it. Both doors now answer
each case alike, including against panva's oidc-provider as the organization's provider.
"""

from io import StringIO

import pytest
from allauth.account.models import EmailAddress
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.models import SocialAccount
from django.core.management import call_command
from django.test import Client, RequestFactory

from accounts.identity import address_holder, unproven_address_release, upstream_person
from accounts.models import AccountAuditAction, AccountAuditEvent
from accounts.services import identity_provider_add
from accounts.socialadapter import SocialAccountAdapter
from oauthclients.models import AccessToken, digest
from oauthflows.grants import JWT_BEARER
from oauthflows.token import idjag
from tests.accounts.test_identity_providers import _upstream_login
from tests.browser.upstream_provider import Upstream, upstream_package  # noqa: F401 - a fixture
from tests.clients.test_mcp_idjag_oidc_provider import (  # noqa: F401 - acme_agent, a fixture
    AGENT,
    MCP,
    SCOPES,
    acme_agent,
    decoded,
    id_jag,
    organization_allows,
    signed_in,
)
from tests.factories import make_user
from tests.oauthflows.helpers import basic, token_request
from tests.oauthflows.idjag_helpers import OrganizationProvider


@pytest.fixture
def org(settings, db):
    """An organization's provider serving its keys on loopback, registered for acme.example."""
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    idjag.jwks_forget()
    provider = OrganizationProvider()
    provider.record = identity_provider_add(
        name="ACME",
        issuer=provider.issuer,
        client_id="our-client-at-acme",
        client_secret="s3cret",
        domains=["acme.example"],
        enforce=False,
    )
    yield provider
    provider.close()
    idjag.jwks_forget()


@pytest.fixture
def alice(db):
    """alice proved alice@acme.example here; no single sign-on link yet."""
    user = make_user("alice")
    EmailAddress.objects.create(user=user, email="alice@acme.example", verified=True, primary=True)
    return user


def allow(client) -> None:
    call_command("identityprovider", "allow-assertions", "ACME", "--client", client.client_id, stdout=StringIO())


def presented(acme_agent, assertion: str):
    client, secret = acme_agent
    data = {"grant_type": JWT_BEARER.grant_type, "assertion": assertion, "resource": MCP, "scope": "BOOKING_READ"}
    return token_request(Client(enforce_csrf_checks=True), data, auth=basic(client.client_id, secret))


# (email, email_verified as the upstream says it, whether it names alice)
CASES = [
    ("alice@acme.example", True, True),
    ("ALICE@Acme.Example", True, True),  # addresses compare without case
    ("alice@acme.example", False, False),  # the finding: not vouched for
    ("alice@acme.example", None, False),  # no email_verified at all
    ("alice@acme.example", "true", False),  # a string is not the boolean OpenID Connect says
    ("alice@elsewhere.example", True, False),  # not one of the provider's domains
]


@pytest.mark.parametrize(("email", "email_verified", "names_alice"), CASES)
def test_the_rule(org, alice, email, email_verified, names_alice):
    EmailAddress.objects.create(user=alice, email="alice@elsewhere.example", verified=True)
    found = upstream_person(provider=org.record, sub="someone", email=email, email_verified=email_verified)
    assert (found == alice) is names_alice and (found is None) is not names_alice


def test_an_address_nobody_proved_names_nobody(org, db):
    claimant = make_user("claimant")
    claimant.email = "bob@acme.example"
    claimant.save()
    EmailAddress.objects.create(user=claimant, email="bob@acme.example", verified=False, primary=True)
    assert upstream_person(provider=org.record, sub="bob", email="bob@acme.example", email_verified=True) is None


def test_the_link_comes_first_whatever_the_email_says(org, alice):
    linked = make_user("linked")
    SocialAccount.objects.create(user=linked, provider=org.record.slug, uid="employee-7")
    found = upstream_person(provider=org.record, sub="employee-7", email="alice@acme.example", email_verified=True)
    assert found == linked
    # Another provider's link with the same sub names nobody here.
    assert upstream_person(provider=org.record, sub="employee-8", email=None) is None


@pytest.mark.parametrize(("email", "email_verified", "names_alice"), CASES)
def test_both_doors_answer_alike(org, alice, acme_agent, settings, email, email_verified, names_alice):
    EmailAddress.objects.create(user=alice, email="alice@elsewhere.example", verified=True)
    # ID-JAG: a token for alice, or invalid_grant.
    allow(acme_agent[0])
    claims = {"aud": settings.OAUTH_ISSUER, "client_id": acme_agent[0].client_id, "resource": MCP}
    claims |= {"scope": "BOOKING_READ", "sub": "someone", "email": email, "email_verified": email_verified}
    answer = presented(acme_agent, org.assertion(**claims))
    if names_alice:
        assert answer.status_code == 200, answer.content
        assert AccessToken.objects.get(token_checksum=digest(answer.json()["access_token"])).user == alice
    else:
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant", answer.content
        assert not AccessToken.objects.exists()
    # The sign-in: joins alice's account, or never does.
    request = RequestFactory().get("/")
    request.session = Client().session
    login = _upstream_login(email, email_verified, provider=org.record.slug)
    login.connect = lambda request, user: setattr(login, "joined", user)
    if names_alice:
        SocialAccountAdapter(request).pre_social_login(request, login)
        assert login.joined == alice
    else:
        # alice holds the address: a sign-in that cannot name her is refused, never joined to her.
        with pytest.raises(ImmediateHttpResponse) as refused:
            SocialAccountAdapter(request).pre_social_login(request, login)
        assert refused.value.response.status_code == 403 and not hasattr(login, "joined")


# --- the same through panva's oidc-provider: its sign-in, its RFC 8693 exchange, its own key -------

ACCOUNTS = {
    # Two people at the organization's provider, neither linked here; both say alice's address.
    "alice": {"email": "alice@acme.example", "email_verified": True, "amr": ["pwd"]},
    "impostor": {"email": "alice@acme.example", "email_verified": False, "amr": ["pwd"]},
}


@pytest.fixture(scope="module")
def person_upstream(upstream_package, tmp_path_factory):
    policy = tmp_path_factory.mktemp("idjag-person") / "policy.json"
    policy.write_text("{}")
    upstream = Upstream(upstream_package, clients=[AGENT], accounts=ACCOUNTS, id_jag_policy=policy)
    try:
        yield upstream
    finally:
        upstream.close()


@pytest.fixture
def acme_idp(person_upstream, settings, db):
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    idjag.jwks_forget()
    record = identity_provider_add(
        name="ACME",
        issuer=person_upstream.issuer,
        client_id="scheduling",
        client_secret="our-secret-at-acme",
        domains=["acme.example"],
        enforce=False,
    )
    yield record
    idjag.jwks_forget()


def test_an_assertion_from_oidc_provider_that_does_not_vouch_for_the_email_finds_nobody(
    person_upstream, acme_idp, alice, acme_agent, settings
):
    allow(acme_agent[0])
    organization_allows(person_upstream, {settings.OAUTH_ISSUER: acme_agent[0].client_id})
    vouched = id_jag(person_upstream, signed_in(person_upstream, login="alice"), audience=settings.OAUTH_ISSUER)
    unvouched = id_jag(person_upstream, signed_in(person_upstream, login="impostor"), audience=settings.OAUTH_ISSUER)
    # What the provider really signed: the same address, vouched for once.
    payloads = [decoded(assertion)[1] for assertion in (vouched, unvouched)]
    assert [(p["email"], p["email_verified"]) for p in payloads] == [
        ("alice@acme.example", True),
        ("alice@acme.example", False),
    ]
    refused = presented(acme_agent, unvouched)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.content
    granted = presented(acme_agent, vouched)
    assert granted.status_code == 200, granted.content
    assert AccessToken.objects.get(token_checksum=digest(granted.json()["access_token"])).user == alice


# --- the address goes to the person the provider vouches for ---------------------------------------


def test_every_account_that_only_claimed_the_address_loses_it_audited(org):
    # A bare User.email (an administrator typed it), and an unproved row beside a proved address.
    typed = make_user("typed")
    typed.email = "bob@acme.example"
    typed.save()
    claimed = make_user("claimed")
    EmailAddress.objects.create(user=claimed, email="claimed@example.com", verified=True)
    EmailAddress.objects.create(user=claimed, email="Bob@acme.example", verified=False, primary=True)
    claimed.email = "Bob@acme.example"
    claimed.save()
    assert unproven_address_release(provider=org.record, email="bob@acme.example") == 2
    typed.refresh_from_db()
    claimed.refresh_from_db()
    assert typed.email == "" and claimed.email == "claimed@example.com"
    assert list(EmailAddress.objects.filter(user=claimed).values_list("email", "primary")) == [
        ("claimed@example.com", True)
    ]
    released = AccountAuditEvent.objects.filter(action=AccountAuditAction.UNPROVEN_ADDRESS_RELEASED)
    assert sorted(event.user.username for event in released) == ["claimed", "typed"]
    assert address_holder(email="bob@acme.example") is None


@pytest.mark.parametrize(
    "email",
    [
        "alice@acme.example",  # alice proved it: never taken away
        "bob@elsewhere.example",  # not a domain the provider vouches for
    ],
)
def test_an_address_someone_proved_or_the_provider_cannot_vouch_for_is_never_released(org, alice, email):
    holder = make_user("bob")
    EmailAddress.objects.create(user=holder, email="bob@elsewhere.example", verified=False, primary=True)
    with pytest.raises(ValueError):
        unproven_address_release(provider=org.record, email=email)
    assert EmailAddress.objects.filter(email=email).exists()


def test_connecting_a_provider_to_a_signed_in_account_takes_no_one_s_address(org):
    # allauth's "connect" (a signed-in account adds the provider) makes no account, so it takes no
    # address from anyone either.
    claimant = make_user("claimant")
    EmailAddress.objects.create(user=claimant, email="carol@acme.example", verified=False, primary=True)
    request = RequestFactory().get("/")
    request.session = Client().session
    login = _upstream_login("carol@acme.example", True, provider=org.record.slug)
    login.state["process"] = "connect"
    SocialAccountAdapter(request).pre_social_login(request, login)
    assert EmailAddress.objects.get(email="carol@acme.example").user == claimant
