"""ID-JAG (RFC 7523 JWT bearer grant with an organization's identity assertion, oauthflows.token.idjag):
the organization's provider decides, no consent page; every claim is checked, each refusal tested."""

import json
import logging
import time
from io import StringIO

import pytest
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.core.management import call_command
from jwcrypto import jwk

from accounts.models import AccountAuditAction, AccountAuditEvent, AssertionPolicy
from accounts.services import identity_provider_add
from oauthclients import services
from oauthclients.models import AccessToken, digest
from oauthflows.grants import JWT_BEARER
from oauthflows.token import idjag
from tests.factories import make_client
from tests.oauthflows.helpers import METADATA, TOKEN, basic, token_request
from tests.oauthflows.idjag_helpers import OrganizationProvider
from tests.openapi.conformance import assert_conforms, assert_request_documented

MCP = "http://127.0.0.1:8931/mcp"


@pytest.fixture
def idjag_org(settings, db):
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    idjag.jwks_forget()
    provider = OrganizationProvider()
    record = identity_provider_add(
        name="ACME",
        issuer=provider.issuer,
        client_id="our-client-at-acme",
        client_secret="s3cret",
        domains=["acme.example"],
        enforce=False,
    )
    provider.record = record
    yield provider
    provider.close()
    idjag.jwks_forget()


@pytest.fixture
def agent(owner, reviewer):
    created = make_client(
        owner, name="Acme Agent", scopes=["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"], approve=True
    )
    services.resource_server_create(owner=reviewer, name="Scheduling MCP", resource_uri=MCP, actor=reviewer)
    return created.client, created.secret.plaintext


@pytest.fixture
def assertions_allowed(idjag_org, agent):
    out = StringIO()
    call_command(
        "identityprovider", "allow-assertions", "ACME", "--client", agent[0].client_id,
        "--scope", "PROFILE_READ", "--scope", "BOOKING_READ", stdout=out,
    )  # fmt: skip
    assert json.loads(out.getvalue())["assertions"] == {agent[0].client_id: ["BOOKING_READ", "PROFILE_READ"]}


@pytest.fixture
def linked(idjag_org, end_user):
    SocialAccount.objects.create(user=end_user, provider=idjag_org.record.slug, uid="employee-42")
    return end_user


def grant(api, agent, assertion, **extra):
    client, secret = agent
    data = {"grant_type": JWT_BEARER.grant_type, "assertion": assertion, "resource": MCP} | extra
    data = {key: value for key, value in data.items() if value is not None}
    return token_request(api, data, auth=basic(client.client_id, secret))


def claims_for(agent, settings, **extra):
    return {
        "aud": settings.OAUTH_ISSUER,
        "client_id": agent[0].client_id,
        "resource": MCP,
        "scope": "BOOKING_READ",
    } | extra


def test_the_metadata_lists_the_jwt_bearer_grant(api, db):
    assert JWT_BEARER.grant_type in api.get(METADATA).json()["grant_types_supported"]


def test_an_allowed_assertion_gets_a_token_with_no_consent_page(
    api, browser, idjag_org, agent, assertions_allowed, linked, settings
):
    response = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["scope"] == "BOOKING_READ" and "refresh_token" not in answer
    row = AccessToken.objects.get(token_checksum=digest(answer["access_token"]))
    assert row.user == linked and row.application == agent[0]
    assert row.resource == [MCP] and row.assertion_issuer == idjag_org.issuer
    event = AccountAuditEvent.objects.get(action=AccountAuditAction.ASSERTION_GRANTED)
    assert event.detail["granted_by"] == "ACME's identity provider" and event.user == linked
    # Connected apps: allowed by the organization, and revocable there.
    page = browser.get("/settings/apps/").content.decode()
    assert "Acme Agent" in page and "your organization (ACME)" in page
    browser.post(f"/settings/apps/{agent[0].client_id}/revoke/")
    assert not AccessToken.objects.filter(pk=row.pk).exists()


def test_the_grant_and_its_answer_are_what_the_openapi_document_says(
    api, idjag_org, agent, assertions_allowed, linked, settings
):
    client, secret = agent
    assertion = idjag_org.assertion(**claims_for(agent, settings))
    body = {"grant_type": JWT_BEARER.grant_type, "assertion": assertion, "resource": MCP, "scope": "BOOKING_READ"}
    assert_request_documented("post", TOKEN, "application/json", body)
    response = token_request(api, body, auth=basic(client.client_id, secret))
    assert_conforms("post", TOKEN, response)
    answer = response.json()
    # The one answer of every grant (oauthflows.grants.token_response): the spec's `bearer`.
    assert set(answer) == {"access_token", "token_type", "expires_in", "scope"}
    assert answer["token_type"] == "bearer" and answer["expires_in"] == settings.OAUTH_ACCESS_TOKEN_LIFETIME


def test_the_person_may_be_found_by_a_verified_address_in_the_providers_domain(
    api, idjag_org, agent, assertions_allowed, end_user, settings
):
    EmailAddress.objects.create(user=end_user, email="ada@acme.example", verified=True, primary=True)
    ok = grant(
        api,
        agent,
        idjag_org.assertion(**claims_for(agent, settings), sub="other", email="ada@acme.example", email_verified=True),
    )
    assert ok.status_code == 200, ok.content
    # Not in the provider's domains, or not verified: unknown.
    EmailAddress.objects.create(user=end_user, email="ada@elsewhere.example", verified=True)
    refused = grant(
        api,
        agent,
        idjag_org.assertion(**claims_for(agent, settings), sub="x", email="ada@elsewhere.example", email_verified=True),
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"


FORGED = jwk.JWK.generate(kty="EC", crv="P-256", kid="org-key-1")


@pytest.mark.parametrize(
    "change, error",
    [
        ({"key": FORGED}, "invalid_grant"),  # forged signature: same kid, another key
        ({"header": {"typ": "JWT"}}, "invalid_grant"),
        ({"header": {"kid": "unknown"}}, "invalid_grant"),
        ({"aud": "https://someone-else.example"}, "invalid_grant"),
        ({"client_id": "another-client"}, "invalid_grant"),
        ({"exp": int(time.time()) - 5}, "invalid_grant"),  # expired
        ({"exp": int(time.time()) + 3600}, "invalid_grant"),  # beyond 5 minutes
        ({"iat": int(time.time()) + 600}, "invalid_grant"),  # in the future
        ({"iat": int(time.time()) - 365 * 86400}, "invalid_grant"),  # a year old, its exp still ahead
        ({"iat": int(time.time()) - idjag.MAX_LIFETIME_SECONDS - 30}, "invalid_grant"),  # older than it may live
        ({"jti": None}, "invalid_grant"),
        ({"sub": "stranger"}, "invalid_grant"),  # unknown person
        ({"iss": "https://other-idp.example"}, "invalid_grant"),
        ({"resource": "https://not-ours.example/api"}, "invalid_target"),
        ({"scope": "BOOKING_READ BOOKING_WRITE"}, "invalid_scope"),  # beyond the policy
    ],
)
def test_each_claim_is_checked(api, idjag_org, agent, assertions_allowed, linked, settings, change, error):
    change = dict(change)
    key, header = change.pop("key", None), change.pop("header", None)
    claims = claims_for(agent, settings) | change
    if error == "invalid_scope":
        response = grant(api, agent, idjag_org.assertion(**claims), scope="BOOKING_READ BOOKING_WRITE")
    else:
        response = grant(api, agent, idjag_org.assertion(key=key, header=header, **claims))
    assert response.status_code == 400, response.content
    assert response.json()["error"] == error, response.json()
    assert not AccessToken.objects.filter(assertion_issuer=idjag_org.issuer).exists()


def test_a_jti_is_used_once(api, idjag_org, agent, assertions_allowed, linked, settings):
    assertion = idjag_org.assertion(**claims_for(agent, settings))
    assert grant(api, agent, assertion).status_code == 200
    replayed = grant(api, agent, assertion)
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
    assert "used already" in replayed.json()["error_description"]


def test_a_scope_asked_beyond_the_assertions_own_is_refused(
    api, idjag_org, agent, assertions_allowed, linked, settings
):
    response = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)), scope="PROFILE_READ")
    assert response.status_code == 400 and response.json()["error"] == "invalid_scope"


def test_a_client_the_organization_did_not_allow_is_refused(api, idjag_org, agent, linked, settings):
    response = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert response.status_code == 400 and response.json()["error"] == "unauthorized_client"


def test_a_wrong_client_secret_is_invalid_client(api, idjag_org, agent, assertions_allowed, linked, settings):
    client, _secret = agent
    response = grant(api, (client, "wrong"), idjag_org.assertion(**claims_for(agent, settings)))
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"


def test_an_unverified_client_stays_under_the_ceiling(
    api, idjag_org, assertions_allowed, linked, settings, agent, reviewer
):
    created = services.client_self_register(
        name="Self agent", kind="confidential", redirect_uris=["http://127.0.0.1:9/cb"],
        scopes=["BOOKING_READ", "BOOKING_WRITE"], source="dcr",
    )  # fmt: skip
    client = created.client
    call_command(
        "identityprovider", "allow-assertions", "acme", "--client", client.client_id, stdout=StringIO()
    )  # fmt: skip
    pair = (client, created.secret.plaintext)
    claims = claims_for(pair, settings, scope="BOOKING_READ BOOKING_WRITE")
    refused = grant(api, pair, idjag_org.assertion(**claims))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_scope"
    assert "unverified" in refused.json()["error_description"]
    assert grant(api, pair, idjag_org.assertion(**claims), scope="BOOKING_READ").status_code == 200


def test_deny_assertions_ends_what_they_granted(api, idjag_org, agent, assertions_allowed, linked, settings):
    token = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings))).json()["access_token"]
    assert AccessToken.objects.filter(token_checksum=digest(token)).exists()
    out = StringIO()
    call_command("identityprovider", "deny-assertions", "ACME", "--client", agent[0].client_id, stdout=out)
    assert json.loads(out.getvalue())["access_tokens_ended"] == {agent[0].client_id: 1}
    assert not AccessToken.objects.filter(token_checksum=digest(token)).exists()
    assert not AssertionPolicy.objects.exists()
    again = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert again.status_code == 400 and again.json()["error"] == "unauthorized_client"


def test_an_unknown_kid_refetches_the_jwks_at_most_every_few_seconds(
    api, idjag_org, agent, assertions_allowed, linked, settings, monkeypatch
):
    assert grant(api, agent, idjag_org.assertion(**claims_for(agent, settings))).status_code == 200
    hits = idjag_org.jwks_hits
    rotated = jwk.JWK.generate(kty="EC", crv="P-256", kid="org-key-2")
    idjag_org.published.append(rotated)
    # Just fetched: the new kid is not looked for yet.
    early = grant(api, agent, idjag_org.assertion(key=rotated, **claims_for(agent, settings)))
    assert early.status_code == 400 and idjag_org.jwks_hits == hits
    monkeypatch.setattr(idjag, "JWKS_REFETCH_SECONDS", 0)
    later = grant(api, agent, idjag_org.assertion(key=rotated, **claims_for(agent, settings)))
    assert later.status_code == 200, later.content
    assert idjag_org.jwks_hits == hits + 1
    # A known kid is served from the cache.
    assert grant(api, agent, idjag_org.assertion(key=rotated, **claims_for(agent, settings))).status_code == 200
    assert idjag_org.jwks_hits == hits + 1


def test_an_iat_within_the_lifetime_accepted_is_accepted(api, idjag_org, agent, assertions_allowed, linked, settings):
    issued = int(time.time()) - idjag.MAX_LIFETIME_SECONDS + 10
    response = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings), iat=issued))
    assert response.status_code == 200, response.content
    too_old = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings), iat=issued - 60))
    assert too_old.status_code == 400 and "issued too long ago" in too_old.json()["error_description"]


def test_a_failed_refetch_keeps_the_last_good_keys(
    api, idjag_org, agent, assertions_allowed, linked, settings, monkeypatch, caplog
):
    assert grant(api, agent, idjag_org.assertion(**claims_for(agent, settings))).status_code == 200
    # The provider's JWKS fails; the cached keys are stale, so every assertion tries a refetch.
    idjag_org.jwks_failing = True
    monkeypatch.setattr(idjag, "JWKS_CACHE_SECONDS", 0)
    monkeypatch.setattr(idjag, "JWKS_REFETCH_SECONDS", 0)
    hits = idjag_org.jwks_hits
    with caplog.at_level(logging.WARNING, logger="oauthflows.token.idjag"):
        kept = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert idjag_org.jwks_hits == hits + 1 and "could not be fetched" in caplog.text  # tried, failed, logged
    assert kept.status_code == 200, kept.content  # the known key still verifies
    # A key it does not hold cannot be checked while the fetch fails.
    other = jwk.JWK.generate(kty="EC", crv="P-256", kid="org-key-2")
    idjag_org.published.append(other)
    refused = grant(api, agent, idjag_org.assertion(key=other, **claims_for(agent, settings)))
    assert refused.status_code == 400 and "could not be fetched" in refused.json()["error_description"]
    # Kept for so long only.
    monkeypatch.setattr(idjag, "JWKS_KEPT_SECONDS", 0)
    expired = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert expired.status_code == 400 and "could not be fetched" in expired.json()["error_description"]
    # Once the provider answers again, its keys are its current ones, the new one included.
    idjag_org.jwks_failing = False
    assert grant(api, agent, idjag_org.assertion(key=other, **claims_for(agent, settings))).status_code == 200


def test_a_key_the_provider_withdrew_goes_at_the_next_fetch(
    api, idjag_org, agent, assertions_allowed, linked, settings, monkeypatch
):
    assert grant(api, agent, idjag_org.assertion(**claims_for(agent, settings))).status_code == 200
    rotated = jwk.JWK.generate(kty="EC", crv="P-256", kid="org-key-2")
    idjag_org.published = [rotated]
    monkeypatch.setattr(idjag, "JWKS_CACHE_SECONDS", 0)
    monkeypatch.setattr(idjag, "JWKS_REFETCH_SECONDS", 0)
    withdrawn = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert withdrawn.status_code == 400 and "not in its issuer's JWKS" in withdrawn.json()["error_description"]
    assert grant(api, agent, idjag_org.assertion(key=rotated, **claims_for(agent, settings))).status_code == 200


def test_keys_that_cannot_be_fetched_are_refused_as_such_and_the_reason_logged(
    api, idjag_org, agent, assertions_allowed, linked, settings, monkeypatch, caplog
):
    # The provider's discovery is plain http on loopback, which only the development setting allows.
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = False
    with caplog.at_level(logging.WARNING, logger="oauthflows.token.idjag"):
        refused = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.content
    assert "could not be fetched" in refused.json()["error_description"]
    assert [record.getMessage() for record in caplog.records if idjag_org.issuer in record.getMessage()], caplog.text
    # Not fetched again at once; once allowed, and a moment later, the same provider's keys are.
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    again = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert again.status_code == 400 and "could not be fetched" in again.json()["error_description"]
    monkeypatch.setattr(idjag, "JWKS_REFETCH_SECONDS", 0)
    accepted = grant(api, agent, idjag_org.assertion(**claims_for(agent, settings)))
    assert accepted.status_code == 200, accepted.content


def test_the_commands_refuse_unknown_names(idjag_org, agent):
    from django.core.management import CommandError

    with pytest.raises(CommandError):
        call_command("identityprovider", "allow-assertions", "Nobody", "--client", agent[0].client_id)
    with pytest.raises(CommandError):
        call_command("identityprovider", "allow-assertions", "ACME", "--client", "no-such-client")
    with pytest.raises(CommandError):
        call_command("identityprovider", "allow-assertions", "ACME", "--client", agent[0].client_id, "--scope", "NOPE")


def test_the_admin_allows_and_denies_through_the_audited_services(
    client, admin_user, idjag_org, agent, linked, settings
):
    client.force_login(admin_user)
    page = client.post(
        "/admin/accounts/assertionpolicy/add/",
        {"provider": idjag_org.record.pk, "client": agent[0].pk, "scopes": '["BOOKING_READ"]'},
    )
    assert page.status_code == 302, page.content[:2000]
    policy = AssertionPolicy.objects.get()
    assert policy.scopes == ["BOOKING_READ"]
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.ASSERTIONS_ALLOWED, actor=admin_user).exists()
    client.post(f"/admin/accounts/assertionpolicy/{policy.pk}/delete/", {"post": "yes"})
    assert not AssertionPolicy.objects.exists()
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.ASSERTIONS_DENIED, actor=admin_user).exists()


# --- a pending client: its owner's own tokens only (oauthclients.policy, as the code grant) ---------


@pytest.fixture
def pending_agent(idjag_org, owner):
    created = make_client(owner, name="Acme Agent", scopes=["PROFILE_READ", "BOOKING_READ"])  # not approved
    call_command(
        "identityprovider", "allow-assertions", "ACME", "--client", created.client.client_id,
        "--scope", "BOOKING_READ", stdout=StringIO(),
    )  # fmt: skip
    return created.client, created.secret.plaintext


def test_a_pending_client_gets_no_token_for_anyone_but_its_owner(
    api, idjag_org, pending_agent, linked, settings, reviewer
):
    """ID-JAG refused only a rejected client; the code grant held a pending one to its owner's
    own grants. The stricter rule for both: another person's assertion is unauthorized_client."""
    services.resource_server_create(owner=reviewer, name="Scheduling MCP", resource_uri=MCP, actor=reviewer)
    response = grant(api, pending_agent, idjag_org.assertion(**claims_for(pending_agent, settings)))
    assert response.status_code == 400 and response.json()["error"] == "unauthorized_client", response.content
    assert not AccessToken.objects.filter(application=pending_agent[0]).exists()


def test_a_pending_clients_owner_gets_a_token_for_themselves(api, idjag_org, pending_agent, owner, settings, reviewer):
    services.resource_server_create(owner=reviewer, name="Scheduling MCP", resource_uri=MCP, actor=reviewer)
    SocialAccount.objects.create(user=owner, provider=idjag_org.record.slug, uid="employee-42")
    response = grant(api, pending_agent, idjag_org.assertion(**claims_for(pending_agent, settings)))
    assert response.status_code == 200, response.content
    assert AccessToken.objects.get(application=pending_agent[0]).user == owner
