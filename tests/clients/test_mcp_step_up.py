# ruff: noqa: F811 - the fixtures imported from test_mcp_agent are named as arguments
"""Scope step-up (MCP 2025-11-25, RFC 6750 §3.1) with the official MCP Python SDK: a tool call the
token does not cover is answered HTTP 403 `insufficient_scope` naming the scopes to ask for; the
SDK authorizes again for the union (SEP-2350), the consent page shows what is new apart from what
was allowed, and the grant grows. An unverified agent asking beyond the ceiling is refused on a
page of ours, never redirected before its consent page (oauthclients/redirects.py)."""

import asyncio
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
import requests
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from oauthclients import services
from oauthclients.models import OAuthClient
from tests.clients.test_client_libraries import TIMEOUT
from tests.clients.test_mcp_agent import (  # noqa: F401 - fixtures
    agent_provider,
    bookings_calls,
    bookings_service,
    mcp_server,
    token_for,
)
from tests.factories import make_client
from tokens.models import Consent


async def session_calls(mcp_url: str, provider, calls: list[tuple[str, dict]]) -> list:
    async with (
        httpx2.AsyncClient(auth=provider, timeout=TIMEOUT) as http,
        streamable_http_client(mcp_url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments in calls]


def consent_page_parts(page: str) -> tuple[str, str]:
    """A step-up's consent page: (what is new, what the user already allowed), each its list only."""
    assert "It will also be able to:" in page and "You already allowed it to:" in page
    new_part, granted_part = page.split("It will also be able to:")[1].split("You already allowed it to:")
    return new_part, granted_part.split("<form")[0]


def tool_call(mcp_url: str, token: str, tool: str) -> requests.Response:
    return requests.post(
        mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {"title": "x"}}},
        headers={"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"},
        timeout=TIMEOUT,
    )


@pytest.mark.django_db(transaction=True)
def test_a_tool_call_without_its_scope_is_a_403_insufficient_scope_challenge(live_issuer, mcp_server, end_user, owner):
    client = make_client(owner, scopes=["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"], approve=True).client
    token = token_for(end_user, client, scope="PROFILE_READ BOOKING_READ", resource=[mcp_server])
    refused = tool_call(mcp_server, token, "create_booking")
    assert refused.status_code == 403
    parts = urlsplit(mcp_server)
    assert refused.headers["WWW-Authenticate"] == (
        'Bearer realm="mcp", error="insufficient_scope", scope="BOOKING_READ BOOKING_WRITE PROFILE_READ", '
        f'resource_metadata="{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource/mcp"'
    )
    assert refused.json()["error"] == "insufficient_scope"
    # What the token covers goes through; tools/list needs no tool scope.
    assert tool_call(mcp_server, token, "whoami").status_code == 200
    assert tool_call(mcp_server, token, "no_such_tool").status_code == 200  # the SDK's own error


@pytest.mark.django_db(transaction=True)
def test_an_agent_approved_after_registering_steps_up_to_create_booking(
    live_issuer, mcp_server, bookings_service, user_agent, end_user, reviewer
):
    seen: dict = {}
    provider = agent_provider(mcp_server, user_agent, live_issuer, seen)
    (bookings,) = asyncio.run(session_calls(mcp_server, provider, [("list_bookings", {})]))
    assert not bookings.is_error, bookings
    client = OAuthClient.objects.get(name="Test agent")
    assert Consent.objects.get(client=client, user=end_user).scopes == ["PROFILE_READ", "BOOKING_READ"]

    # An administrator reviews the agent: enables the write scope and approves it.
    client = services.client_set_scopes(
        client=client, scopes=["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"], actor=reviewer
    )
    services.client_approve(client=client, actor=reviewer)

    booked, listed = asyncio.run(
        session_calls(mcp_server, provider, [("create_booking", {"title": "Step-up lunch"}), ("list_bookings", {})])
    )
    assert not booked.is_error, booked
    assert booked.structured_content["booking"]["title"] == "Step-up lunch"
    assert "Step-up lunch" in [b["title"] for b in listed.structured_content["bookings"]]

    # The SDK asked again for the union, and the page showed what is new apart from what was allowed.
    asked = parse_qs(urlsplit(seen["authorization_url"]).query)["scope"][0].split()
    assert set(asked) == {"PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"}
    new_part, granted_part = consent_page_parts(seen["consent_page"])
    assert "BOOKING_WRITE" in new_part and "BOOKING_READ" not in new_part
    assert "BOOKING_READ" in granted_part and "PROFILE_READ" in granted_part and "BOOKING_WRITE" not in granted_part
    # The grant grew.
    assert set(Consent.objects.get(client=client, user=end_user).scopes) == {
        "PROFILE_READ",
        "BOOKING_READ",
        "BOOKING_WRITE",
    }
    assert [call["method"] for call in bookings_calls(bookings_service[1])] == ["GET", "POST", "GET"]


@pytest.mark.django_db(transaction=True)
def test_an_unverified_agent_stepping_up_beyond_the_ceiling_is_refused_on_our_page(
    live_issuer, mcp_server, user_agent, end_user, reviewer
):
    seen: dict = {}
    provider = agent_provider(mcp_server, user_agent, live_issuer, seen)
    (bookings,) = asyncio.run(session_calls(mcp_server, provider, [("list_bookings", {})]))
    assert not bookings.is_error, bookings
    client = OAuthClient.objects.get(name="Test agent")
    # Even with the scope enabled on it, an unverified client stays under the ceiling.
    services.client_set_scopes(client=client, scopes=["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"], actor=reviewer)

    refusals: list = []

    async def redirect_handler(authorization_url: str) -> None:
        page = user_agent.get(authorization_url, allow_redirects=False, timeout=TIMEOUT)
        refusals.append(page)
        raise RuntimeError("the authorization server refused the step-up")

    provider.context.redirect_handler = redirect_handler
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the handler's error its own way
        asyncio.run(session_calls(mcp_server, provider, [("create_booking", {"title": "Never"})]))
    (page,) = refusals
    assert page.status_code == 400 and "Location" not in page.headers  # no redirect to the agent
    assert "This application is unverified" in page.text and "BOOKING_WRITE" in page.text
    assert Consent.objects.get(client=client, user=end_user).scopes == ["PROFILE_READ", "BOOKING_READ"]
