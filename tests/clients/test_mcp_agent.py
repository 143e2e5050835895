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
import os
import secrets
import subprocess
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
from oauthclients.models import AccessToken, ClientStatus, OAuthClient, digest
from tests.clients.test_client_libraries import TIMEOUT, allow
from tests.factories import make_client
from tests.integration.server import PROJECT_ROOT, free_port, stop, wait_until_answering
from tests.oauthflows.helpers import pkce_pair
from tests.oauthflows.test_client_metadata_documents import DocumentServer

REDIRECT_URI = "http://127.0.0.1:33418/callback"


@contextlib.contextmanager
def running_mcp(server: str, reviewer, tmp_path, *, introspection_url: str | None = None):
    """The example MCP server in its own process, as docs/agents.md runs it, with a resource
    server's credentials; yields its resource URI."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    created = services.resource_server_create(
        owner=reviewer, name=f"Scheduling MCP {port}", resource_uri=resource, actor=reviewer
    )
    env = {
        **os.environ,
        "OAUTH_ISSUER": server,
        "OAUTH_INTROSPECTION_URL": introspection_url or server + "/v2/auth/oauth2/introspect",
        "OAUTH_RESOURCE_SERVER_ID": created.client.client_id,
        "OAUTH_RESOURCE_SERVER_SECRET": created.secret.plaintext,
        "OAUTH_INTROSPECTION_TIMEOUT": "2",
    }
    for name in ("DJANGO_SETTINGS_MODULE", "OAUTH_RESOURCE_URI", "OAUTH_REQUIRE_AUDIENCE"):
        env.pop(name, None)
    log_path = tmp_path / f"mcp-{port}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "examples.scheduling_mcp", "--port", str(port)],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
def mcp_server(server, reviewer, tmp_path):
    with running_mcp(server, reviewer, tmp_path) as resource:
        yield resource


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


def agent_provider(mcp_url: str, browser: requests.Session, server: str, seen: dict) -> OAuthClientProvider:
    async def redirect_handler(authorization_url: str) -> None:
        seen["authorization_url"] = authorization_url
        consent_page = browser.get(authorization_url + "&prompt=consent", timeout=TIMEOUT)
        seen["consent_page"] = consent_page.text
        location = await asyncio.to_thread(allow, browser, server, authorization_url)
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
def test_an_sdk_agent_registers_is_authorized_and_calls_the_tools(server, mcp_server, user_agent, end_user):
    seen: dict = {}
    provider = agent_provider(mcp_server, user_agent, server, seen)
    results = asyncio.run(call_tools(mcp_server, provider))

    assert results["tools"] == ["list_bookings", "whoami"]
    whoami = results["whoami"]
    assert not whoami.is_error, whoami
    assert whoami.structured_content["username"] == end_user.username
    bookings = results["list_bookings"]
    assert not bookings.is_error, bookings
    assert bookings.structured_content == {"username": end_user.username, "bookings": []}

    # It registered itself, and is unverified; the user was told so.
    client = OAuthClient.objects.get(name="Test agent")
    assert client.status == ClientStatus.UNVERIFIED
    assert client.registration_source == OAuthClient.RegistrationSource.DCR
    assert "Unverified app" in seen["consent_page"]
    # The SDK asked for the scopes the MCP server's metadata lists, bound to the MCP server.
    query = parse_qs(urlsplit(seen["authorization_url"]).query)
    assert set(query["scope"][0].split()) == {"PROFILE_READ", "BOOKING_READ"}
    assert query["resource"] == [mcp_server]
    token = AccessToken.objects.get(application=client)
    assert token.resource == [mcp_server]
    assert token.token_checksum == digest(provider.context.current_tokens.access_token)


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
def test_its_metadata_lists_only_the_tools_scopes(server, mcp_server):
    parts = urlsplit(mcp_server)
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        document = requests.get(f"{parts.scheme}://{parts.netloc}{path}", timeout=TIMEOUT).json()
        assert document["resource"] == mcp_server
        assert document["authorization_servers"] == [server]
        assert document["scopes_supported"] == ["BOOKING_READ", "PROFILE_READ"]
        assert document["bearer_methods_supported"] == ["header"]
    refused = post_mcp(mcp_server, None)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == (
        f'Bearer realm="mcp", resource_metadata="{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource/mcp"'
    )


@pytest.mark.django_db(transaction=True)
def test_a_token_for_another_resource_or_none_is_refused_one_for_it_accepted(server, mcp_server, end_user, owner):
    client = make_client(owner, scopes=["PROFILE_READ"], approve=True).client
    for resource in ([server + "/v2"], []):  # another resource's; no audience (OAUTH_REQUIRE_AUDIENCE=1)
        response = post_mcp(mcp_server, token_for(end_user, client, scope="PROFILE_READ", resource=resource))
        assert response.status_code == 401
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
        assert "resource_metadata=" in response.headers["WWW-Authenticate"]
        assert f"resource={mcp_server}" in response.json()["error_description"]
    assert post_mcp(mcp_server, "not-a-token").status_code == 401

    token = token_for(end_user, client, scope="PROFILE_READ", resource=[mcp_server])
    whoami, bookings = asyncio.run(call_with(mcp_server, token, "whoami", "list_bookings"))
    assert not whoami.is_error and whoami.structured_content["username"] == end_user.username
    # A tool beyond the token's scopes answers a tool error naming the scope it needs.
    assert bookings.is_error
    assert "needs the BOOKING_READ scope" in bookings.content[0].text


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_authorization_server_is_503_never_allowed(server, reviewer, tmp_path, end_user, owner):
    with running_mcp(server, reviewer, tmp_path, introspection_url=f"http://127.0.0.1:{free_port()}/introspect") as url:
        client = make_client(owner, scopes=["PROFILE_READ"], approve=True).client
        response = post_mcp(url, token_for(end_user, client, scope="PROFILE_READ", resource=[url]))
        assert response.status_code == 503
        assert response.headers["Retry-After"]


@pytest.mark.django_db(transaction=True)
def test_an_agent_with_a_client_id_metadata_document_connects(server, mcp_server, user_agent, end_user, settings):
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
            "scope": " ".join(resource["scopes_supported"]),
            "state": "st",
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
            "resource": resource["resource"],
        }
        url = authorization_server["authorization_endpoint"] + "?" + urlencode(query)
        consent_page = user_agent.get(url + "&prompt=consent", timeout=TIMEOUT)
        assert "Document Agent" in consent_page.text and "Unverified app" in consent_page.text
        location = allow(user_agent, server, url)
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
