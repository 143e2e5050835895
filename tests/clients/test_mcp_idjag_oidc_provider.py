# ruff: noqa: F811 - the fixtures imported from other modules are named as arguments
"""ID-JAG from an identity provider nobody here wrote: panva's `oidc-provider` (npm, run by
tests/browser/upstream_provider.py) is the organization's provider, with an RFC 8693 token exchange
registered on it (the example examples/idjag_provider/provider.mjs) that turns an ID token it
issued into an Identity Assertion JWT Authorization Grant signed with its own key.

The employee signs in at the provider through its authorization code flow (its login form, PKCE,
the agent's client authenticated there) and the agent gets a real ID token; the agent trades it at
the provider for an ID-JAG naming this server, and the MCP Python SDK's
IdentityAssertionOAuthProvider trades that here (oauthflows.token.idjag) for a token bound to the example
MCP server, with no consent page; the tools answer for the employee. Then what the provider really
issued is refused here when it should be: an assertion for another authorization server, for a
client the organization's provider may not reach, from an issuer this server does not know, and
signed with a key the provider has since rotated out of its JWKS. The provider's side refuses what
it should too (an ID token not its own or not for the calling client, an audience its policy does
not name). One provider process serves the whole module.
"""

import asyncio
import base64
import json
from io import StringIO
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import pytest
import requests
from allauth.socialaccount.models import SocialAccount
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

from accounts.services import identity_provider_add
from oauthclients import services
from oauthclients.models import AccessToken, digest
from oauthflows.grants import JWT_BEARER
from oauthflows.token import idjag
from oauthflows.token.idjag import ID_JAG_TYPE
from tests.browser.upstream_provider import TOKEN_EXCHANGE, Upstream, upstream_package  # noqa: F401
from tests.clients.test_client_libraries import TIMEOUT
from tests.clients.test_mcp_agent import MemoryStorage, bookings_service, call_tools, mcp_server  # noqa: F401
from tests.factories import make_client
from tests.oauthflows.helpers import basic, pkce_pair, token_request

ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
# The agent's client at the organization's provider; the code comes back to its callback, where
# nothing listens: the test reads the code from the redirect, as the agent's own listener would.
AGENT = {
    "client_id": "scheduling-agent",
    "client_secret": "agent-secret-at-acme-0123456789abcdef",
    "redirect_uris": ["http://127.0.0.1:33419/callback"],
    "grant_types": ["authorization_code", TOKEN_EXCHANGE],
}
# Another of the organization's apps: its ID tokens are not the agent's to exchange.
OTHER_APP = {
    "client_id": "acme-intranet",
    "client_secret": "intranet-secret-at-acme-0123456789abcdef",
    "redirect_uris": ["http://127.0.0.1:33420/callback"],
}
ACCOUNTS = {"wile": {"email": "wile@acme.example", "email_verified": True, "amr": ["pwd", "otp"]}}
ANOTHER_SERVER = "https://auth.another-vendor.example"
MCP = "http://127.0.0.1:8931/mcp"
SCOPES = ["PROFILE_READ", "BOOKING_READ"]


@pytest.fixture(scope="module")
def org_upstream(upstream_package, tmp_path_factory):
    """The organization's provider, for the whole module; tests write its ID-JAG policy."""
    policy = tmp_path_factory.mktemp("idjag") / "policy.json"
    policy.write_text("{}")
    upstream = Upstream(upstream_package, clients=[AGENT, OTHER_APP], accounts=ACCOUNTS, id_jag_policy=policy)
    try:
        yield upstream
    finally:
        upstream.close()


@pytest.fixture
def acme_idjag(org_upstream, settings, db):
    """The provider registered here, its discovery and JWKS fetched on loopback (allowed, as for
    development), with nothing cached from an earlier test."""
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    idjag.jwks_forget()
    record = identity_provider_add(
        name="Acme SSO",
        issuer=org_upstream.issuer,
        client_id="scheduling",
        client_secret="our-secret-at-acme",
        domains=["acme.example"],
        enforce=False,
    )
    yield record
    idjag.jwks_forget()


@pytest.fixture
def linked_employee(acme_idjag, end_user):
    """The employee's account, linked to their `sub` at the provider by an earlier single sign-on."""
    SocialAccount.objects.create(user=end_user, provider=acme_idjag.slug, uid="wile")
    return end_user


def organization_allows(org_upstream, audiences: dict[str, str]) -> None:
    """The organization's administrators: the agent may get ID-JAGs for these authorization servers
    ({their issuer: the agent's client_id there}), up to SCOPES."""
    policy = {
        issuer: {"clients": {AGENT["client_id"]: client_id}, "scopes": SCOPES}
        for issuer, client_id in audiences.items()
    }
    org_upstream.id_jag_policy.write_text(json.dumps(policy))


def discovery(org_upstream) -> dict:
    return requests.get(org_upstream.issuer + "/.well-known/openid-configuration", timeout=TIMEOUT).json()


def signed_in(org_upstream, client: dict = AGENT, login: str = "wile") -> str:
    """The employee signs in at the provider (its authorization code flow with PKCE and its login
    form), and `client` redeems the code there, authenticated: the provider's ID token for it."""
    endpoints = discovery(org_upstream)
    verifier, challenge = pkce_pair()
    redirect_uri = client["redirect_uris"][0]
    query = {
        "client_id": client["client_id"],
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "scope": "openid email",
        "state": "st",
        "nonce": "n",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    with requests.Session() as person:
        page = person.get(endpoints["authorization_endpoint"] + "?" + urlencode(query), timeout=TIMEOUT)
        assert page.status_code == 200 and "/interaction/" in page.url, page.text[:500]
        answer = person.post(page.url + "/login", data={"login": login}, allow_redirects=False, timeout=TIMEOUT)
        while answer.is_redirect and not answer.headers["Location"].startswith(redirect_uri):
            answer = person.get(urljoin(answer.url, answer.headers["Location"]), allow_redirects=False, timeout=TIMEOUT)
    assert answer.is_redirect, answer.text[:500]
    code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
    tokens = requests.post(
        endpoints["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        },
        auth=(client["client_id"], client["client_secret"]),
        timeout=TIMEOUT,
    )
    assert tokens.status_code == 200, tokens.text
    return tokens.json()["id_token"]


def exchanged(org_upstream, id_token: str, *, audience: str, resource: str = MCP, **extra) -> requests.Response:
    """The agent's RFC 8693 token exchange at the provider: its ID token for an ID-JAG."""
    data = {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG_TOKEN_TYPE,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
        "scope": " ".join(SCOPES),
    } | extra
    return requests.post(
        discovery(org_upstream)["token_endpoint"],
        data={key: value for key, value in data.items() if value is not None},
        auth=(AGENT["client_id"], AGENT["client_secret"]),
        timeout=TIMEOUT,
    )


def id_jag(org_upstream, id_token: str, *, audience: str, resource: str = MCP) -> str:
    response = exchanged(org_upstream, id_token, audience=audience, resource=resource)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["issued_token_type"] == ID_JAG_TOKEN_TYPE and answer["token_type"] == "N_A"
    return answer["access_token"]


def decoded(jwt: str) -> tuple[dict, dict]:
    """A JWT's header and claims, unverified (this server verifies; the test reads)."""

    def part(text: str) -> dict:
        return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))

    header, claims, _signature = jwt.split(".")
    return part(header), part(claims)


@pytest.fixture
def acme_agent(owner, reviewer, db):
    """The agent's client here (confidential, approved) and the MCP server as a resource server."""
    created = make_client(owner, name="Acme agent", scopes=SCOPES, approve=True)
    services.resource_server_create(owner=reviewer, name="Scheduling MCP", resource_uri=MCP, actor=reviewer)
    return created.client, created.secret.plaintext


def allow_assertions(client) -> None:
    call_command("identityprovider", "allow-assertions", "Acme SSO", "--client", client.client_id, stdout=StringIO())


def presented(acme_agent, assertion: str):
    """The agent's RFC 7523 JWT bearer grant here, with its secret."""
    client, secret = acme_agent
    data = {"grant_type": JWT_BEARER.grant_type, "assertion": assertion, "resource": MCP}
    return token_request(Client(enforce_csrf_checks=True), data, auth=basic(client.client_id, secret))


@pytest.mark.django_db(transaction=True)
def test_an_employee_signed_in_at_the_organizations_provider_uses_the_agent_with_no_consent_page(
    org_upstream, live_issuer, linked_employee, mcp_server, bookings_service, owner
):
    created = make_client(owner, name="Acme agent", scopes=SCOPES, approve=True)
    client = created.client
    allow_assertions(client)
    organization_allows(org_upstream, {live_issuer: client.client_id})
    id_token = signed_in(org_upstream)
    issued = []

    async def assertion_provider(audience: str, resource: str) -> str:
        response = await asyncio.to_thread(exchanged, org_upstream, id_token, audience=audience, resource=resource)
        assert response.status_code == 200, response.text
        issued.append(response.json()["access_token"])
        return issued[-1]

    provider = IdentityAssertionOAuthProvider(
        server_url=mcp_server,
        storage=MemoryStorage(),
        client_id=client.client_id,
        client_secret=created.secret.plaintext,
        issuer=live_issuer,
        assertion_provider=assertion_provider,
        scope=" ".join(SCOPES),
    )

    results = asyncio.run(call_tools(mcp_server, provider))
    whoami, bookings = results["whoami"], results["list_bookings"]
    assert not whoami.is_error and whoami.structured_content["username"] == linked_employee.username
    assert not bookings.is_error and bookings.structured_content["bookings"]
    # What the provider signed: the draft's claims, with its own key (published in its JWKS).
    assert len(issued) == 1
    header, claims = decoded(issued[0])
    jwks = requests.get(discovery(org_upstream)["jwks_uri"], timeout=TIMEOUT).json()
    assert header["typ"] == ID_JAG_TYPE and header["kid"] in {key["kid"] for key in jwks["keys"]}
    assert claims["iss"] == org_upstream.issuer and claims["sub"] == "wile" and claims["aud"] == live_issuer
    assert claims["client_id"] == client.client_id and claims["resource"] == mcp_server
    assert claims["scope"] == " ".join(SCOPES) and claims["jti"] and claims["exp"] - claims["iat"] == 300
    token = AccessToken.objects.get(application=client, act__isnull=True)
    assert (
        token.user == linked_employee
        and token.assertion_issuer == org_upstream.issuer
        and token.resource == [mcp_server]
    )


def test_an_assertion_the_provider_made_for_another_authorization_server_is_refused(
    org_upstream, acme_agent, linked_employee
):
    organization_allows(
        org_upstream, {settings.OAUTH_ISSUER: acme_agent[0].client_id, ANOTHER_SERVER: acme_agent[0].client_id}
    )
    allow_assertions(acme_agent[0])
    id_token = signed_in(org_upstream)
    elsewhere = id_jag(org_upstream, id_token, audience=ANOTHER_SERVER)
    assert decoded(elsewhere)[1]["aud"] == ANOTHER_SERVER
    refused = presented(acme_agent, elsewhere)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.content
    assert "aud" in refused.json()["error_description"]
    # The same person and agent, the assertion for this server: accepted.
    here = presented(acme_agent, id_jag(org_upstream, id_token, audience=settings.OAUTH_ISSUER))
    assert here.status_code == 200, here.content


def test_a_client_this_server_did_not_let_the_provider_reach_is_refused(org_upstream, acme_agent, linked_employee):
    organization_allows(org_upstream, {settings.OAUTH_ISSUER: acme_agent[0].client_id})
    assertion = id_jag(org_upstream, signed_in(org_upstream), audience=settings.OAUTH_ISSUER)
    refused = presented(acme_agent, assertion)
    assert refused.status_code == 400 and refused.json()["error"] == "unauthorized_client", refused.content
    assert not AccessToken.objects.exists()
    # Once an administrator here allows it, the same assertion (its jti still unused) is accepted.
    allow_assertions(acme_agent[0])
    accepted = presented(acme_agent, assertion)
    assert accepted.status_code == 200, accepted.content
    assert AccessToken.objects.get(token_checksum=digest(accepted.json()["access_token"])).user == linked_employee


def test_an_assertion_from_an_issuer_this_server_does_not_know_is_refused(
    org_upstream, acme_agent, linked_employee, acme_idjag
):
    organization_allows(org_upstream, {settings.OAUTH_ISSUER: acme_agent[0].client_id})
    allow_assertions(acme_agent[0])
    assertion = id_jag(org_upstream, signed_in(org_upstream), audience=settings.OAUTH_ISSUER)
    call_command("identityprovider", "remove", acme_idjag.slug, stdout=StringIO())
    refused = presented(acme_agent, assertion)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.content
    assert "not an identity provider" in refused.json()["error_description"]


def test_an_assertion_signed_with_a_key_the_provider_rotated_out_is_refused(org_upstream, acme_agent, linked_employee):
    organization_allows(org_upstream, {settings.OAUTH_ISSUER: acme_agent[0].client_id})
    allow_assertions(acme_agent[0])
    before = id_jag(org_upstream, signed_in(org_upstream), audience=settings.OAUTH_ISSUER)
    org_upstream.restart()  # a new signing key; the old one is no longer in its JWKS
    refused = presented(acme_agent, before)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.content
    assert "key is not in its issuer's JWKS" in refused.json()["error_description"]
    after = id_jag(org_upstream, signed_in(org_upstream), audience=settings.OAUTH_ISSUER)
    assert decoded(after)[0]["kid"] != decoded(before)[0]["kid"]
    accepted = presented(acme_agent, after)
    assert accepted.status_code == 200, accepted.content


def test_the_provider_exchanges_only_its_own_id_tokens_issued_to_the_agent_for_audiences_it_allows(org_upstream):
    organization_allows(org_upstream, {ANOTHER_SERVER: "agent-there"})
    id_token = signed_in(org_upstream)
    assert exchanged(org_upstream, id_token, audience=ANOTHER_SERVER).status_code == 200
    header, claims, signature = id_token.split(".")
    tampered = ".".join((header, claims, signature[:-4] + ("AAAA" if signature[-4:] != "AAAA" else "BBBB")))
    someone_elses = signed_in(org_upstream, client=OTHER_APP)
    for subject_token, audience, error in (
        (tampered, ANOTHER_SERVER, "invalid_grant"),  # not its signature
        (someone_elses, ANOTHER_SERVER, "invalid_grant"),  # its own, but issued to another client
        (id_token, "https://not-in-the-policy.example", "invalid_target"),
    ):
        response = exchanged(org_upstream, subject_token, audience=audience)
        assert response.status_code == 400 and response.json()["error"] == error, (audience, response.text)
    wrong_type = exchanged(
        org_upstream,
        id_token,
        audience=ANOTHER_SERVER,
        requested_token_type="urn:ietf:params:oauth:token-type:access_token",
    )
    assert wrong_type.status_code == 400 and wrong_type.json()["error"] == "invalid_request"
