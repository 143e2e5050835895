# ruff: noqa: F811 - the fixtures imported from test_mcp_agent are named as arguments
"""docs/agents.md's TypeScript agent (tests/clients/node/mcp_agent.mjs, the MCP TypeScript SDK from
npm) against the example MCP server: it registers itself, the user consents (this test is the
browser), and its tools answer with the user's bookings from the bookings service."""

import json
import os
import subprocess
from urllib.parse import parse_qs, urlsplit

import pytest

from oauthclients.models import ClientStatus, OAuthClient
from tests.clients.test_client_libraries import allow
from tests.clients.test_mcp_agent import bookings_service, mcp_server  # noqa: F401


@pytest.mark.django_db(transaction=True)
def test_the_typescript_sdk_agent_registers_consents_and_calls_the_tools(
    node_package, server, mcp_server, bookings_service, user_agent, end_user
):
    process = subprocess.Popen(
        ["node", "mcp_agent.mjs"],
        cwd=node_package,
        env={**os.environ, "MCP_URL": mcp_server},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = json.loads(process.stdout.readline() or "{}")
        assert "authorize" in first, process.stderr.read()[-3000:]
        location = allow(user_agent, server, first["authorize"])
        process.stdin.write(parse_qs(urlsplit(location).query)["code"][0] + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline() or "{}")
        assert answer, process.stderr.read()[-3000:]
    finally:
        process.kill()
        process.wait(timeout=10)
    assert answer["tools"] == ["create_booking", "list_bookings", "whoami"]
    assert answer["whoami"]["username"] == end_user.username
    assert [b["title"] for b in answer["bookings"]["bookings"]] == ["Intro call", "Design review", "Dentist"]
    client = OAuthClient.objects.get(client_id=answer["client_id"])
    assert client.status == ClientStatus.UNVERIFIED and client.name == "TypeScript agent"
    # RFC 7592: the registration answer carried a registration access token (the SDK 1.32 keeps
    # only RFC 7591's fields of it, so an agent that manages its registration reads the answer itself).
    assert client.registration_token_digest
