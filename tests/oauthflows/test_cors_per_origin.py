"""CORS decided one origin at a time (issue 28, finding 3; oauthflows/cors.py).

Open registration is free, so the number of public clients is anyone's to choose: a CORS decision
looks up the one origin asked about (an indexed ClientOrigin row), never the set of them all, and
remembers a bounded number of answers for a short time. A self-registered (unverified) client's
origins read the token and revocation endpoints, which its own browser agent needs, but not
/v2/me or userinfo until an administrator approves it: the "approved origins" are approved.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from oauthclients import services
from oauthclients.models import ClientOrigin, ClientStatus, OAuthClient
from oauthflows import cors
from tests.factories import make_client
from tests.oauthflows.helpers import ME, METADATA, REVOKE, TOKEN, client_post, exchange, me, refresh
from tests.oauthflows.test_cors import ACAO, assert_no_credentials, preflight
from tests.oauthflows.test_registration import REGISTER, agent_metadata, code_for, register

USERINFO = "/v2/auth/oauth2/userinfo"
AGENT = "https://agent.example"  # the origin a stranger registers, free of charge
SPA = "https://spa.example.com"


@pytest.fixture
def unverified_agent(api, db):
    response = register(api, agent_metadata(redirect_uris=[AGENT + "/callback"]))
    assert response.status_code == 201, response.content
    client = OAuthClient.objects.get(client_id=response.json()["client_id"])
    assert client.status == ClientStatus.UNVERIFIED and client.client_type == "public"
    return client


def origins_of(client) -> set[tuple[str, bool]]:
    return set(ClientOrigin.objects.filter(client=client).values_list("origin", "approved"))


# --- who reads what ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", [TOKEN, REVOKE])
def test_an_unverified_clients_origin_reads_the_token_and_revocation_endpoints(unverified_agent, api, path):
    response = preflight(api, path, AGENT)
    assert response.status_code == 200 and response[ACAO] == AGENT
    assert_no_credentials(response)
    answer = client_post(
        api, path, unverified_agent, {"token": "x"} if path == REVOKE else {"grant_type": "x"}, origin=AGENT
    )
    assert answer[ACAO] == AGENT
    assert_no_credentials(answer)


@pytest.mark.parametrize("path", [ME, USERINFO])
@pytest.mark.parametrize("method", ["GET", "POST", "PATCH"])
def test_an_unverified_clients_origin_does_not_read_me_or_userinfo(unverified_agent, api, path, method):
    response = preflight(api, path, AGENT, method=method)
    assert not response.has_header(ACAO)


def test_a_stranger_with_a_token_of_an_unverified_client_cannot_read_me_from_its_page(unverified_agent, browser, api):
    code, verifier = code_for(browser, unverified_agent, scope="PROFILE_READ")
    tokens = exchange(api, unverified_agent, code, verifier=verifier, origin=AGENT)
    assert tokens.status_code == 200 and tokens[ACAO] == AGENT  # its own agent redeems its codes
    answer = me(api, tokens.json()["access_token"], HTTP_ORIGIN=AGENT)
    assert answer.status_code == 200  # the token works; the page just cannot read the answer
    assert not answer.has_header(ACAO)


@pytest.mark.parametrize("path", [ME, USERINFO])
def test_approving_the_client_opens_me_and_userinfo_to_its_origin_at_once(unverified_agent, api, reviewer, path):
    assert not preflight(api, path, AGENT, method="GET").has_header(ACAO)  # the "no" is now cached
    services.client_approve(client=unverified_agent, actor=reviewer)
    response = preflight(api, path, AGENT, method="GET")
    assert response[ACAO] == AGENT
    assert_no_credentials(response)


@pytest.mark.parametrize("path", [ME, USERINFO])
def test_an_approved_public_clients_origin_reads_me_and_userinfo(db, api, owner, path):
    make_client(owner, name="SPA", kind="public", redirect_uris=[SPA + "/cb"], approve=True)
    assert preflight(api, path, SPA, method="GET")[ACAO] == SPA


def test_one_unverified_client_does_not_lend_its_origin_to_another(unverified_agent, api, owner, browser):
    other = make_client(owner, name="SPA", kind="public", redirect_uris=[SPA + "/cb"], approve=True).client
    assert preflight(api, TOKEN, AGENT)[ACAO] == AGENT  # a preflight names no client
    answer = refresh(api, other, "x", origin=AGENT)
    assert answer.status_code in (400, 401) and not answer.has_header(ACAO)


@pytest.mark.parametrize("origin", [AGENT, "https://evil.example", "null"])
def test_registration_and_metadata_answer_any_origin_without_credentials(db, api, origin):
    for response in (
        preflight(api, REGISTER, origin),
        api.post(REGISTER, data=agent_metadata(), content_type="application/json", HTTP_ORIGIN=origin),
        api.get(METADATA, HTTP_ORIGIN=origin),
    ):
        assert response.status_code in (200, 201) and response[ACAO] in (origin, "*"), response.content
        assert_no_credentials(response)


def test_a_rejected_unverified_clients_origin_loses_the_token_endpoint(unverified_agent, api, reviewer):
    assert preflight(api, TOKEN, AGENT)[ACAO] == AGENT
    services.client_reject(client=unverified_agent, actor=reviewer, reason="Phishing.")
    assert not preflight(api, TOKEN, AGENT).has_header(ACAO)
    assert not client_post(api, REVOKE, unverified_agent, {"token": "x"}, origin=AGENT).has_header(ACAO)


# --- one origin at a time ---------------------------------------------------------------------


def queries_of(call) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        call()
    return [query["sql"] for query in captured.captured_queries]


@pytest.mark.parametrize("path", [TOKEN, ME])
def test_a_preflight_looks_up_its_own_origin_once_whatever_the_number_of_clients(db, api, owner, path):
    for n in range(30):
        services.client_self_register(
            name=f"Agent {n}",
            kind="public",
            redirect_uris=[f"https://agent{n}.example/cb"],
            scopes=["PROFILE_READ"],
            source=OAuthClient.RegistrationSource.DCR,
        )
    make_client(owner, name="SPA", kind="public", redirect_uris=[SPA + "/cb"], approve=True)

    first = queries_of(lambda: preflight(api, path, SPA))
    assert len(first) == 1, first
    # The lookup names this origin; it never reads clients' redirect URIs.
    assert "oauthclients_clientorigin" in first[0] and "redirect_uris" not in first[0]
    assert queries_of(lambda: preflight(api, path, SPA)) == []  # answered from the cache
    other = queries_of(lambda: preflight(api, path, "https://agent7.example"))
    assert len(other) == 1  # another origin: its own lookup, one query again


def test_the_cache_keeps_at_most_its_size_of_origins(db, api, monkeypatch):
    monkeypatch.setattr(cors, "CORS_ORIGIN_CACHE_SIZE", 2)
    for n in range(5):
        preflight(api, TOKEN, f"https://nobody{n}.example")
    assert len(cors._cors_answers) == 2
    # The oldest was dropped: asked again, it is looked up again; the newest is still remembered.
    assert len(queries_of(lambda: preflight(api, TOKEN, "https://nobody0.example"))) == 1
    assert queries_of(lambda: preflight(api, TOKEN, "https://nobody4.example")) == []


def test_a_remembered_answer_expires(unverified_agent, api, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(cors.time, "monotonic", lambda: clock[0])
    assert preflight(api, TOKEN, AGENT)[ACAO] == AGENT
    # A change no service made (another process's, as this one sees it): the answer stands...
    ClientOrigin.objects.filter(client=unverified_agent).delete()
    clock[0] += cors.CORS_ORIGIN_CACHE_SECONDS - 1
    assert preflight(api, TOKEN, AGENT)[ACAO] == AGENT
    # ...until it expires.
    clock[0] += 2
    assert not preflight(api, TOKEN, AGENT).has_header(ACAO)


@pytest.mark.parametrize("origin", ["x" * 301, "https://a.example\x00", ""])
def test_an_impossible_origin_costs_no_query(db, api, origin):
    assert queries_of(lambda: cors.cors_origin_is_registered(origin=origin, approved_only=False)) == []
    assert not cors.cors_origin_is_registered(origin=origin, approved_only=False)


# --- the rows follow every service ------------------------------------------------------------


def test_the_origins_follow_a_public_clients_review_and_edits(db, owner, reviewer):
    client = make_client(owner, name="SPA", kind="public", redirect_uris=[SPA + "/cb", SPA + "/other"]).client
    assert origins_of(client) == set()  # pending: nobody else may use its redirect URIs
    client = services.client_approve(client=client, actor=reviewer)
    assert origins_of(client) == {(SPA, True)}  # one row per origin, not per redirect URI
    # Narrowing to a loopback URI keeps it approved; the rows follow.
    client = services.client_update(
        client=client,
        actor=owner,
        name=client.name,
        purpose=client.purpose,
        website_url=client.website_url,
        redirect_uris=[SPA + "/cb"],
        scopes=client.scope_list,
    )
    assert client.status == ClientStatus.APPROVED and origins_of(client) == {(SPA, True)}
    # A new redirect URI sends it back to review: no rows until approved again.
    client = services.client_update(
        client=client,
        actor=owner,
        name=client.name,
        purpose=client.purpose,
        website_url=client.website_url,
        redirect_uris=[SPA + "/cb", "http://127.0.0.1:3000/cb"],
        scopes=client.scope_list,
    )
    assert client.status == ClientStatus.PENDING and origins_of(client) == set()
    client = services.client_approve(client=client, actor=reviewer)
    assert origins_of(client) == {(SPA, True), ("http://127.0.0.1:3000", True)}
    services.client_reject(client=client, actor=reviewer, reason="No.")
    assert origins_of(client) == set()


def test_a_deleted_client_has_no_origins(db, owner):
    client = make_client(owner, name="SPA", kind="public", redirect_uris=[SPA + "/cb"], approve=True).client
    assert origins_of(client) == {(SPA, True)}
    services.client_delete(client=client, actor=owner)
    assert origins_of(client) == set()


def test_a_confidential_client_has_no_origins(db, owner):
    client = make_client(owner, redirect_uris=[SPA + "/cb"], approve=True).client
    assert origins_of(client) == set()


def test_a_self_registered_client_has_unapproved_origins_until_approved(unverified_agent, reviewer):
    assert origins_of(unverified_agent) == {(AGENT, False)}
    services.client_approve(client=unverified_agent, actor=reviewer)
    assert origins_of(unverified_agent) == {(AGENT, True)}


def test_a_pending_self_registration_has_no_origins(db, settings):
    settings.OAUTH_DYNAMIC_REGISTRATION = "pending"
    created = services.client_self_register(
        name="Agent",
        kind="public",
        redirect_uris=[AGENT + "/cb"],
        scopes=["PROFILE_READ"],
        source=OAuthClient.RegistrationSource.DCR,
    )
    assert origins_of(created.client) == set()


def test_a_refreshed_metadata_document_moves_the_origins(db):
    client = services.client_self_register(
        name="Agent",
        kind="public",
        redirect_uris=[AGENT + "/cb"],
        scopes=["PROFILE_READ"],
        source=OAuthClient.RegistrationSource.CIMD,
        client_id="https://agent.example/client.json",
    ).client
    services.client_document_refresh(
        client=client,
        name="Agent",
        kind="public",
        redirect_uris=["https://moved.example/cb"],
        scopes=["PROFILE_READ"],
        expires=None,
    )
    assert origins_of(client) == {("https://moved.example", False)}


def test_an_unused_registration_removed_loses_its_origins(unverified_agent, settings):
    from datetime import timedelta

    from django.utils import timezone

    later = timezone.now() + timedelta(days=settings.OAUTH_UNUSED_REGISTRATION_DAYS + 1)
    assert services.unused_registrations_remove(now=later) == 1
    assert origins_of(unverified_agent) == set()


def test_the_migration_writes_the_origins_of_clients_made_before_it(unverified_agent, db, owner, reviewer):
    from importlib import import_module

    from django.apps import apps

    approved = make_client(owner, name="SPA", kind="public", redirect_uris=[SPA + "/cb"], approve=True).client
    make_client(owner, name="Pending", kind="public", redirect_uris=["https://pending.example/cb"])
    expected = set(ClientOrigin.objects.values_list("client_id", "origin", "approved"))
    ClientOrigin.objects.all().delete()  # as before migration 0013
    import_module("oauthclients.migrations.0014_client_web_origins")._origins_of_existing_clients(apps, None)
    assert set(ClientOrigin.objects.values_list("client_id", "origin", "approved")) == expected
    assert expected == {(unverified_agent.pk, AGENT, False), (approved.pk, SPA, True)}
