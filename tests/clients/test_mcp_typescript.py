# ruff: noqa: F811 - the fixtures imported from test_mcp_agent are named as arguments
"""docs/agents.md's TypeScript agent (tests/clients/node/mcp_agent.mjs, the MCP TypeScript SDK from
npm) against the example MCP server, the whole way the Python SDK goes (test_mcp_agent.py,
test_mcp_step_up.py): it registers itself, the user consents (this test is the browser), its read
tools answer with the user's bookings from the bookings service; an administrator approves it; it
steps up to create_booking (403 insufficient_scope, a new consent for what is new) and the booking
is in the bookings service's database; then it reads, updates and deletes its registration with its
registration access token (RFC 7592), which ends its tokens."""

import json
import os
import subprocess
from urllib.parse import parse_qs, urlsplit

import pytest

from oauthclients import services
from oauthclients.models import AccessToken, ClientStatus, OAuthClient, RefreshToken
from tests.clients.test_client_libraries import TIMEOUT, allow
from tests.clients.test_mcp_agent import bookings_calls, bookings_in, bookings_service, mcp_server  # noqa: F401
from tests.clients.test_mcp_step_up import consent_page_parts
from tokens.models import Consent


class Agent:
    """The script as a process: one JSON line out per step, one line in per question."""

    def __init__(self, node_package, mcp_url: str):
        self.process = subprocess.Popen(
            ["node", "mcp_agent.mjs"],
            cwd=node_package,
            env={**os.environ, "MCP_URL": mcp_url},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def next(self, key: str):
        line = self.process.stdout.readline()
        answer = json.loads(line) if line else {}
        if key not in answer:
            self.process.kill()
            pytest.fail(f"expected {key!r} from the agent, got {line!r}; stderr: {self.process.stderr.read()[-3000:]}")
        return answer[key]

    def answer(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def consent(self, user_agent, live_issuer) -> str:
        """The user allows what the agent's authorization URL asks; the code goes back to it."""
        authorization_url = self.next("authorize")
        location = allow(user_agent, live_issuer, authorization_url)
        self.answer(parse_qs(urlsplit(location).query)["code"][0])
        return authorization_url

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=TIMEOUT)


@pytest.mark.django_db(transaction=True)
def test_the_typescript_sdk_agent_goes_from_registration_to_a_booking_and_deletes_itself(
    node_package, live_issuer, mcp_server, bookings_service, user_agent, end_user, reviewer
):
    agent = Agent(node_package, mcp_server)
    try:
        # 1. It registers itself and the user allows what the MCP server's 401 names.
        first_url = agent.consent(user_agent, live_issuer)
        read = agent.next("read")
        client = OAuthClient.objects.get(client_id=read["client_id"])
        assert client.status == ClientStatus.UNVERIFIED and client.name == "TypeScript agent"
        asked = parse_qs(urlsplit(first_url).query)
        assert set(asked["scope"][0].split()) == {"PROFILE_READ", "BOOKING_READ"}
        assert asked["resource"] == [mcp_server]
        assert read["tools"] == ["create_booking", "list_bookings", "whoami"]
        assert read["whoami"]["username"] == end_user.username
        assert [b["title"] for b in read["bookings"]["bookings"]] == ["Intro call", "Design review", "Dentist"]
        assert read["has_refresh_token"]  # what makes the SDK's own step-up refresh (below)
        assert read["registration_client_uri"] == f"{live_issuer}/v2/auth/oauth2/register/{client.client_id}"

        # 2. An administrator reviews it: enables the write scope and approves it.
        client = services.client_set_scopes(
            client=client, scopes=["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"], actor=reviewer
        )
        services.client_approve(client=client, actor=reviewer)
        agent.answer("approved")

        # The SDK 1.32's own answer to the 403, alone: it refreshes (a refresh cannot widen the
        # grant), meets the same 403 and gives up. When an SDK release goes on to authorize
        # instead, this fails: then mcp_agent.mjs's STEP-UP help and docs/agents.md's note can go.
        plain = agent.next("plain")
        assert plain["booked"] is None
        assert plain["error"] == (
            "StreamableHTTPError: Streamable HTTP error: Server returned 403 after trying upscoping"
        )
        assert RefreshToken.objects.filter(application=client, revoked__isnull=False).count() == 1  # it refreshed

        # With the provider's help the SDK authorizes again for the challenge's scopes; the page
        # shows what is new apart from what was allowed; the grant grows.
        authorization_url = agent.next("authorize")
        asked = parse_qs(urlsplit(authorization_url).query)
        assert set(asked["scope"][0].split()) == {"PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"}
        assert asked["resource"] == [mcp_server]
        page = user_agent.get(authorization_url + "&prompt=consent", timeout=TIMEOUT).text
        new_part, granted_part = consent_page_parts(page)
        assert "BOOKING_WRITE" in new_part and "BOOKING_READ" not in new_part
        assert "BOOKING_READ" in granted_part and "BOOKING_WRITE" not in granted_part
        location = allow(user_agent, live_issuer, authorization_url)
        agent.answer(parse_qs(urlsplit(location).query)["code"][0])
        booked = agent.next("booked")
        assert not booked["is_error"], booked
        assert booked["result"]["booking"]["title"] == "TypeScript lunch"
        assert set(booked["scope"].split()) == {"PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"}
        assert set(Consent.objects.get(client=client, user=end_user).scopes) == {
            "PROFILE_READ",
            "BOOKING_READ",
            "BOOKING_WRITE",
        }
        # The booking is in the bookings service's own database, the agent's, made through the MCP server.
        mcp_client = OAuthClient.objects.get(resource_uri=mcp_server)
        (made,) = [b for b in bookings_in(bookings_service[1]) if b["title"] == "TypeScript lunch"]
        assert (made["client_id"], made["actor"]) == (client.client_id, mcp_client.client_id)
        assert [call["method"] for call in bookings_calls(bookings_service[1])] == ["GET", "POST"]

        # 3. RFC 7592: it reads and renames its registration; the token rotates; a renamed approved
        # client goes back to review, into the unverified tier it registered into.
        updated = agent.next("updated")
        assert (updated["read_status"], updated["read_client_id"]) == (200, client.client_id)
        assert updated["read_scope"] == "BOOKING_READ BOOKING_WRITE PROFILE_READ"
        assert (updated["status"], updated["client_name"]) == (200, "TypeScript agent, renamed")
        assert updated["token_rotated"] and updated["old_token_status"] == 401
        client.refresh_from_db()
        assert client.status == ClientStatus.UNVERIFIED and client.name == "TypeScript agent, renamed"
        assert AccessToken.objects.filter(application=client, act__isnull=True).exists()

        # It deletes its registration: its tokens end, and the MCP server refuses the one it holds.
        agent.answer("delete")
        deleted = agent.next("deleted")
        assert (deleted["status"], deleted["read_status"]) == (204, 401)
        assert deleted["mcp_status"] == 401 and 'error="invalid_token"' in deleted["mcp_challenge"]
        client.refresh_from_db()
        assert client.deleted_at is not None and client.status == ClientStatus.REJECTED
        assert not AccessToken.objects.filter(application=client).exists()
        assert not RefreshToken.objects.filter(application=client, revoked__isnull=True).exists()
    finally:
        agent.close()
