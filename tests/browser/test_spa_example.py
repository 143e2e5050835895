"""examples/spa: a single-page app on another origin signs in with PKCE and reads GET /v2/me from the
browser (first-hour finding 13): CORS for the token endpoint and the bearer API, in a real browser."""

import functools
import http.server
import threading
from pathlib import Path
from urllib.parse import urlencode

import pytest

from oauthclients import services
from oauthclients.models import ClientKind
from tests.browser.conftest import new_page
from tests.browser.test_journey import log_in

SPA_DIR = Path(__file__).resolve().parents[2] / "examples" / "spa"


@pytest.fixture
def spa_server():
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(SPA_DIR))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def spa_client(people, live_server, settings, spa_server):
    settings.OAUTH_ISSUER = live_server.url  # the `iss` the app checks (RFC 9207) is the live server's
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live_server.url}
    created = services.client_create(
        owner=people["developer"],
        actor=people["developer"],
        name="SPA example",
        purpose="Shows the user's name.",
        kind=ClientKind.PUBLIC,
        scopes=["PROFILE_READ"],
        redirect_uris=[spa_server + "/index.html"],
        website_url=spa_server + "/",
    )
    return services.client_approve(client=created.client, actor=people["admin"])


def test_the_spa_example_signs_in_and_reads_me_from_another_origin(
    spa_client, spa_server, live_server, chromium, screenshots
):
    client_id = spa_client.client_id  # read before the browser's event loop starts
    page = new_page(chromium, width=390, height=844)
    page.goto(f"{spa_server}/index.html?" + urlencode({"issuer": live_server.url, "client_id": client_id}))
    with page.expect_navigation():
        page.click("#sign-in")
    log_in(page, "enduser")
    screenshots(page, "spa-consent")
    with page.expect_navigation(url=f"{spa_server}/index.html**"):
        page.get_by_role("button", name="Allow").click()
    page.wait_for_function("document.getElementById('status').textContent !== ''")
    screenshots(page, "spa-signed-in")
    assert page.inner_text("#status") == "Signed in."
    assert page.inner_text("#username") == "enduser"
    assert "code=" not in page.url  # the code left the address bar
    assert page.evaluate("sessionStorage.getItem('pkce_verifier')") is None
