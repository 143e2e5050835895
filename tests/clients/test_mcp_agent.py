"""An agent on the official MCP Python SDK connects to the example MCP server with no client
registered beforehand (docs/agents.md).

The SDK's own OAuthClientProvider over its streamable HTTP transport does everything an agent
does: the 401 names the protected resource metadata; that names this authorization server; its
RFC 8414 metadata names the registration endpoint; the SDK registers (RFC 7591), sends the user to
consent (driven here by a requests.Session posting the forms, as a browser would), exchanges the
code with PKCE and `resource` (RFC 8707), and calls the tools. The MCP server is the example run as
its README says (`python -m examples.scheduling_mcp --port N`), verifying tokens by introspection
against pytest-django's live_server.
"""

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import sqlite3
import sys
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
import requests
from django.utils import timezone
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth2_provider.models import set_token_value

from oauthclients import services
from oauthclients.exchangetargets import client_exchange_targets_set
from oauthclients.models import AccessToken, ClientStatus, OAuthClient, digest
from tests.clients.test_client_libraries import TIMEOUT, allow
from tests.factories import make_client
from tests.integration.server import (
    PROJECT_ROOT,
    example_service_environment,
    free_port,
    running_server,
    spawn_logged,
    stop,
    wait_until_answering,
)
from tests.oauthflows.helpers import pkce_pair
from tests.oauthflows.test_client_metadata_documents import DocumentServer

REDIRECT_URI = "http://127.0.0.1:33418/callback"


@contextlib.contextmanager
def running_mcp(
    live_issuer: str, reviewer, tmp_path, *, introspection_url: str | None = None, bookings: str | None = None
):
    """The example MCP server in its own process, as docs/agents.md runs it, with a resource
    server's credentials (allowed to exchange toward `bookings`, the bookings service's resource
    URI); yields its resource URI. Only OAUTH_ISSUER names the authorization server: the
    introspection and token endpoints follow it (an issuer on another port than 8000)."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    created = services.resource_server_create(
        owner=reviewer, name="Scheduling MCP", resource_uri=resource, actor=reviewer
    )
    if bookings:
        client_exchange_targets_set(client=created.client, resource_uris=[bookings], actor=reviewer)
    env = {
        **os.environ,
        "OAUTH_ISSUER": live_issuer,
        "OAUTH_RESOURCE_SERVER_ID": created.client.client_id,
        "OAUTH_RESOURCE_SERVER_SECRET": created.secret.plaintext,
        "OAUTH_INTROSPECTION_TIMEOUT": "2",
        **({"OAUTH_INTROSPECTION_URL": introspection_url} if introspection_url else {}),
        **({"OAUTH_BOOKINGS_URL": bookings + "/bookings"} if bookings else {}),
    }
    for name in ("DJANGO_SETTINGS_MODULE", "OAUTH_RESOURCE_URI", "OAUTH_REQUIRE_AUDIENCE"):
        env.pop(name, None)
    if not introspection_url:
        env.pop("OAUTH_INTROSPECTION_URL", None)
    log_path = tmp_path / f"mcp-{port}.log"
    command = [sys.executable, "-m", "examples.scheduling_mcp", "--port", str(port)]
    process = spawn_logged(command, cwd=PROJECT_ROOT, env=env, log_path=log_path)
    try:
        metadata = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        wait_until_answering(metadata, time.time() + 30, process)
        yield resource
    except Exception:
        print(log_path.read_text(errors="replace")[-5000:])
        raise
    finally:
        stop(process)


@pytest.fixture
def bookings_service(live_issuer, reviewer, tmp_path):
    """examples/bookings_service in its own gunicorn, with its own SQLite database, accepting only
    tokens bound to it; yields (its resource URI, its database's path)."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/v2"
    created = services.resource_server_create(
        owner=reviewer, name="Bookings service", resource_uri=resource, actor=reviewer
    )
    database = tmp_path / "bookings.sqlite3"
    environment = example_service_environment(
        live_issuer,
        created.client.client_id,
        created.secret.plaintext,
        OAUTH_RESOURCE_URI=resource,
        OAUTH_REQUIRE_AUDIENCE="1",
        OAUTH_BOOKINGS_DATABASE=str(database),
    )
    with running_server(None, workers=1, app="examples.bookings_service.wsgi", environment=environment, port=port):
        yield resource, database


@pytest.fixture
def mcp_server(live_issuer, reviewer, tmp_path, bookings_service):
    with running_mcp(live_issuer, reviewer, tmp_path, bookings=bookings_service[0]) as resource:
        yield resource


def _rows(database, table: str) -> list[dict]:
    with contextlib.closing(sqlite3.connect(database)) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute(f"SELECT * FROM {table} ORDER BY id")]


def bookings_calls(database) -> list[dict]:
    """What the bookings service received, from its own database (models.Call)."""
    return _rows(database, "bookings_service_call")


def bookings_in(database) -> list[dict]:
    """The bookings in the bookings service's own database (models.Booking), every user's."""
    return _rows(database, "bookings_service_booking")


class MemoryStorage:
    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def agent_provider(mcp_url: str, browser: requests.Session, live_issuer: str, seen: dict) -> OAuthClientProvider:
    async def redirect_handler(authorization_url: str) -> None:
        seen["authorization_url"] = authorization_url
        consent_page = browser.get(authorization_url + "&prompt=consent", timeout=TIMEOUT)
        seen["consent_page"] = consent_page.text
        location = await asyncio.to_thread(allow, browser, live_issuer, authorization_url)
        seen["location"] = location

    async def callback_handler() -> AuthorizationCodeResult:
        query = {key: values[0] for key, values in parse_qs(urlsplit(seen["location"]).query).items()}
        assert "code" in query, query
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="Test agent",
        redirect_uris=[REDIRECT_URI],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=metadata,
        storage=MemoryStorage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


async def call_tools(mcp_url: str, provider: OAuthClientProvider) -> dict:
    results = {}
    async with (
        httpx2.AsyncClient(auth=provider, timeout=TIMEOUT) as http,
        streamable_http_client(mcp_url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        results["tools"] = sorted(tool.name for tool in tools.tools)
        for name in ("whoami", "list_bookings"):
            results[name] = await session.call_tool(name, {})
    return results


@pytest.mark.django_db(transaction=True)
def test_an_sdk_agent_registers_is_authorized_and_calls_the_tools(
    live_issuer, mcp_server, bookings_service, user_agent, end_user
):
    seen: dict = {}
    provider = agent_provider(mcp_server, user_agent, live_issuer, seen)
    results = asyncio.run(call_tools(mcp_server, provider))

    assert results["tools"] == ["create_booking", "list_bookings", "whoami"]
    whoami = results["whoami"]
    assert not whoami.is_error, whoami
    assert whoami.structured_content["username"] == end_user.username
    bookings = results["list_bookings"]
    assert not bookings.is_error, bookings
    assert bookings.structured_content["username"] == end_user.username
    titles = [booking["title"] for booking in bookings.structured_content["bookings"]]
    assert titles == ["Intro call", "Design review", "Dentist"]  # the service's own, for this user

    # It registered itself, and is unverified; the user was told so.
    client = OAuthClient.objects.get(name="Test agent")
    assert client.status == ClientStatus.UNVERIFIED
    assert client.registration_source == OAuthClient.RegistrationSource.DCR
    assert "Unverified app" in seen["consent_page"]
    # The SDK asked for the scopes the MCP server's metadata lists, bound to the MCP server.
    query = parse_qs(urlsplit(seen["authorization_url"]).query)
    assert set(query["scope"][0].split()) == {"PROFILE_READ", "BOOKING_READ"}
    assert query["resource"] == [mcp_server]
    token = AccessToken.objects.get(application=client, act__isnull=True)
    assert token.resource == [mcp_server]
    agent_token = provider.context.current_tokens.access_token
    assert token.token_checksum == digest(agent_token)

    # The bookings service never saw the agent's token: it got one exchanged for it, bound to it,
    # still the agent's (client_id), with the MCP server as the actor (RFC 8693 `act`).
    mcp_client = OAuthClient.objects.get(resource_uri=mcp_server)
    calls = bookings_calls(bookings_service[1])
    assert len(calls) == 1
    assert calls[0]["token_sha256"] != hashlib.sha256(agent_token.encode()).hexdigest()
    assert calls[0]["client_id"] == client.client_id
    assert calls[0]["actor"] == mcp_client.client_id
    assert json.loads(calls[0]["audience"]) == [bookings_service[0]]
    exchanged = AccessToken.objects.get(application=client, act__isnull=False)
    assert exchanged.scope == "BOOKING_READ" and exchanged.resource == [bookings_service[0]]
    assert exchanged.expires <= token.expires


def token_for(user, client, *, scope: str, resource: list[str]) -> str:
    """An access token as the token endpoint stores it (digest only), bound to `resource`."""
    raw = secrets.token_urlsafe(32)
    row = AccessToken(
        user=user, application=client, scope=scope, expires=timezone.now() + timedelta(minutes=5), resource=resource
    )
    set_token_value(row, raw)
    row.save()
    return raw


async def call_with(mcp_url: str, token: str, *tools: str) -> list:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT) as http,
        streamable_http_client(mcp_url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return [await session.call_tool(name, {}) for name in tools]


def post_mcp(mcp_url: str, token: str | None) -> requests.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return requests.post(
        mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers, timeout=TIMEOUT
    )


@pytest.mark.django_db(transaction=True)
def test_its_metadata_lists_only_the_tools_scopes(live_issuer, mcp_server):
    parts = urlsplit(mcp_server)
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        document = requests.get(f"{parts.scheme}://{parts.netloc}{path}", timeout=TIMEOUT).json()
        assert document["resource"] == mcp_server
        assert document["authorization_servers"] == [live_issuer]
        assert document["scopes_supported"] == ["BOOKING_READ", "BOOKING_WRITE", "PROFILE_READ"]
        assert document["bearer_methods_supported"] == ["header"]
    refused = post_mcp(mcp_server, None)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == (
        f'Bearer realm="mcp", scope="PROFILE_READ BOOKING_READ", '
        f'resource_metadata="{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource/mcp"'
    )


@pytest.mark.django_db(transaction=True)
def test_a_token_for_another_resource_or_none_is_refused_one_for_it_accepted(live_issuer, mcp_server, end_user, owner):
    client = make_client(owner, scopes=["PROFILE_READ"], approve=True).client
    # Another resource's token is inactive to this server's introspection (RFC 7662 §2.2); a token
    # with no audience is active but refused here (OAUTH_REQUIRE_AUDIENCE=1), saying which to ask for.
    for resource, said in (([live_issuer + "/v2"], "invalid, expired or revoked"), ([], f"resource={mcp_server}")):
        response = post_mcp(mcp_server, token_for(end_user, client, scope="PROFILE_READ", resource=resource))
        assert response.status_code == 401
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
        assert "resource_metadata=" in response.headers["WWW-Authenticate"]
        assert said in response.json()["error_description"]
    assert post_mcp(mcp_server, "not-a-token").status_code == 401

    token = token_for(end_user, client, scope="PROFILE_READ", resource=[mcp_server])
    (whoami,) = asyncio.run(call_with(mcp_server, token, "whoami"))
    assert not whoami.is_error and whoami.structured_content["username"] == end_user.username
    # A tool beyond the token's scopes is a 403 insufficient_scope (tests/clients/test_mcp_step_up.py).


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_authorization_server_is_503_never_allowed(live_issuer, reviewer, tmp_path, end_user, owner):
    with running_mcp(
        live_issuer, reviewer, tmp_path, introspection_url=f"http://127.0.0.1:{free_port()}/introspect"
    ) as url:
        client = make_client(owner, scopes=["PROFILE_READ"], approve=True).client
        response = post_mcp(url, token_for(end_user, client, scope="PROFILE_READ", resource=[url]))
        assert response.status_code == 503
        assert response.headers["Retry-After"]


@pytest.mark.django_db(transaction=True)
def test_an_agent_with_a_client_id_metadata_document_connects(live_issuer, mcp_server, user_agent, end_user, settings):
    """The same journey with a client ID metadata document instead of registration: the SDK
    presents such URLs only over https, so this agent is driven over HTTP by the test, step by
    step as the MCP authorization rules describe, with the document on loopback."""
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    documents = DocumentServer()
    try:
        documents.serve(
            {
                "client_id": documents.url,
                "client_name": "Document Agent",
                "redirect_uris": [REDIRECT_URI],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            }
        )
        challenge = post_mcp(mcp_server, None)
        assert challenge.status_code == 401
        metadata_url = challenge.headers["WWW-Authenticate"].split('resource_metadata="')[1].rstrip('"')
        resource = requests.get(metadata_url, timeout=TIMEOUT).json()
        issuer = resource["authorization_servers"][0]
        authorization_server = requests.get(issuer + "/.well-known/oauth-authorization-server", timeout=TIMEOUT).json()
        assert authorization_server["client_id_metadata_document_supported"] is True

        verifier, code_challenge = pkce_pair()
        query = {
            "response_type": "code",
            "client_id": documents.url,
            "redirect_uri": REDIRECT_URI,
            # MCP 2025-11-25: the 401's `scope` first (the read tools; the write tool's is a step-up).
            "scope": challenge.headers["WWW-Authenticate"].split('scope="')[1].split('"')[0],
            "state": "st",
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
            "resource": resource["resource"],
        }
        url = authorization_server["authorization_endpoint"] + "?" + urlencode(query)
        consent_page = user_agent.get(url + "&prompt=consent", timeout=TIMEOUT)
        assert "Document Agent" in consent_page.text and "Unverified app" in consent_page.text
        location = allow(user_agent, live_issuer, url)
        answer = {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}
        assert answer["iss"] == issuer and answer["state"] == "st"
        tokens = requests.post(
            authorization_server["token_endpoint"],
            data={
                "grant_type": "authorization_code",
                "code": answer["code"],
                "redirect_uri": REDIRECT_URI,
                "client_id": documents.url,
                "code_verifier": verifier,
                "resource": resource["resource"],
            },
            timeout=TIMEOUT,
        )
        assert tokens.status_code == 200, tokens.text
        whoami, bookings = asyncio.run(call_with(mcp_server, tokens.json()["access_token"], "whoami", "list_bookings"))
        assert whoami.structured_content["username"] == end_user.username
        assert not bookings.is_error
        client = OAuthClient.objects.get(client_id=documents.url)
        assert client.registration_source == OAuthClient.RegistrationSource.CIMD
        assert client.status == ClientStatus.UNVERIFIED
    finally:
        documents.httpd.shutdown()
        documents.httpd.server_close()


async def call_one(mcp_url: str, token: str, tool: str, arguments: dict):
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT) as http,
        streamable_http_client(mcp_url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return await session.call_tool(tool, arguments)


@pytest.mark.django_db(transaction=True)
def test_create_booking_books_through_an_exchanged_write_token(
    live_issuer, mcp_server, bookings_service, end_user, owner
):
    client = make_client(owner, scopes=["BOOKING_READ", "BOOKING_WRITE"], approve=True).client
    token = token_for(end_user, client, scope="BOOKING_READ BOOKING_WRITE", resource=[mcp_server])
    booked = asyncio.run(call_one(mcp_server, token, "create_booking", {"title": "Lunch with Ada"}))
    assert not booked.is_error, booked
    assert booked.structured_content["booking"]["title"] == "Lunch with Ada"
    assert (
        booked.structured_content["booking"]["made_through"]
        == OAuthClient.objects.get(resource_uri=mcp_server).client_id
    )
    listed = asyncio.run(call_one(mcp_server, token, "list_bookings", {}))
    assert "Lunch with Ada" in [booking["title"] for booking in listed.structured_content["bookings"]]
    post, get = bookings_calls(bookings_service[1])
    assert (post["method"], get["method"]) == ("POST", "GET")
    sent = hashlib.sha256(token.encode()).hexdigest()
    assert sent not in (post["token_sha256"], get["token_sha256"])  # never passed on
    scopes = sorted(AccessToken.objects.filter(act__isnull=False).values_list("scope", flat=True))
    assert scopes == ["BOOKING_READ", "BOOKING_WRITE"]  # each exchange asked only what its tool needs


@pytest.mark.django_db(transaction=True)
def test_without_an_allowed_target_the_tool_fails_and_nothing_reaches_the_bookings_service(
    live_issuer, reviewer, tmp_path, bookings_service, end_user, owner
):
    with running_mcp(live_issuer, reviewer, tmp_path) as url:  # no exchange target allowed
        env_less = url
        client = make_client(owner, scopes=["BOOKING_READ"], approve=True).client
        token = token_for(end_user, client, scope="BOOKING_READ", resource=[env_less])
        answer = asyncio.run(call_one(url, token, "list_bookings", {}))
    assert answer.is_error
    assert "refused the token exchange" in answer.content[0].text
    assert bookings_calls(bookings_service[1]) == []
