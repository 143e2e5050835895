# ruff: noqa: F811 - the fixtures imported from test_mcp_agent are named as arguments
"""An organization's agent on the MCP Python SDK's IdentityAssertionOAuthProvider (ID-JAG,
oauthflows.token.idjag) against this server and the example MCP server: the assertion, minted with a key
the test holds as the organization's provider would (its discovery and JWKS served on loopback),
becomes a token bound to the MCP server with no consent page, and the tools answer for the person;
the bookings service is reached through an exchanged token as for any agent."""

import asyncio
from io import StringIO

import httpx2
import pytest
from allauth.socialaccount.models import SocialAccount
from django.core.management import call_command
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from accounts.services import identity_provider_add
from oauthclients.models import AccessToken
from oauthflows.token import idjag
from tests.clients.test_client_libraries import TIMEOUT
from tests.clients.test_mcp_agent import MemoryStorage, bookings_service, mcp_server  # noqa: F401
from tests.factories import make_client
from tests.oauthflows.idjag_helpers import OrganizationProvider


@pytest.mark.django_db(transaction=True)
def test_an_organizations_agent_gets_a_token_with_no_consent_page(
    live_issuer, mcp_server, bookings_service, end_user, owner, settings
):
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    idjag.jwks_forget()
    organization = OrganizationProvider()
    try:
        identity_provider_add(
            name="ACME", issuer=organization.issuer, client_id="ours", client_secret="s", domains=[], enforce=False
        )
        SocialAccount.objects.create(user=end_user, provider="acme", uid="employee-42")
        created = make_client(owner, name="ACME agent", scopes=["PROFILE_READ", "BOOKING_READ"], approve=True)
        client = created.client
        call_command("identityprovider", "allow-assertions", "ACME", "--client", client.client_id, stdout=StringIO())
        asked = []

        async def assertion_provider(audience: str, resource: str) -> str:
            asked.append((audience, resource))
            return organization.assertion(
                aud=audience, client_id=client.client_id, resource=resource, scope="PROFILE_READ BOOKING_READ"
            )

        provider = IdentityAssertionOAuthProvider(
            server_url=mcp_server,
            storage=MemoryStorage(),
            client_id=client.client_id,
            client_secret=created.secret.plaintext,
            issuer=live_issuer,
            assertion_provider=assertion_provider,
            scope="PROFILE_READ BOOKING_READ",
        )

        async def calls():
            async with (
                httpx2.AsyncClient(auth=provider, timeout=TIMEOUT) as http,
                streamable_http_client(mcp_server, http_client=http) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                return await session.call_tool("whoami", {}), await session.call_tool("list_bookings", {})

        whoami, bookings = asyncio.run(calls())
    finally:
        organization.close()
        idjag.jwks_forget()
    assert asked == [(live_issuer, mcp_server)]
    assert not whoami.is_error and whoami.structured_content["username"] == end_user.username
    assert not bookings.is_error and bookings.structured_content["bookings"]
    token = AccessToken.objects.get(application=client, act__isnull=True)
    assert token.assertion_issuer == organization.issuer and token.resource == [mcp_server]
