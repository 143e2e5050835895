"""The unverified tier in a browser (docs/agents.md), at desktop (1280 px) and phone (390 px) width,
with axe-core on every page: the consent page of a self-registered app (its warning, the redirect
host, no logo or badge, the look-alike flag) and the administrator's unverified queue, the
client's page and the approval that lifts the ceiling."""

from urllib.parse import urlencode

import pytest

from oauthclients import services
from oauthclients.models import OAuthClient
from tests.browser.conftest import new_page
from tests.browser.test_journey import log_in
from tests.browser.test_journeys import VIEWPORTS, Audit
from tests.factories import make_client
from tests.oauthflows.helpers import pkce_pair

pytestmark = pytest.mark.django_db(transaction=True)

NAME = "Calendar Sync"  # the name of a verified app, which the agent copies


@pytest.fixture
def self_registered_agent(people):
    """Made before the browser starts (no ORM call runs while Playwright's loop is up)."""
    make_client(people["developer"], name=NAME, approve=True)
    return services.client_self_register(
        name=NAME.lower(),
        kind="public",
        redirect_uris=["http://127.0.0.1:33418/callback"],
        scopes=["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE"],
        source=OAuthClient.RegistrationSource.DCR,
    ).client


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_unverified_consent_and_admin_queue_with_axe(
    people, self_registered_agent, live_server, chromium, screenshots, viewport
):
    width, height = VIEWPORTS[viewport]
    base = live_server.url
    query = urlencode(
        {
            "client_id": self_registered_agent.client_id,
            "redirect_uri": "http://127.0.0.1:33418/callback",
            "scope": "PROFILE_READ BOOKING_READ",
            "state": "s",
            "code_challenge": pkce_pair()[1],
            "code_challenge_method": "S256",
            "prompt": "consent",
        }
    )
    audit = Audit(screenshots)

    user = new_page(chromium, width=width, height=height)
    user.goto(f"{base}/auth/oauth2/authorize?{query}")
    log_in(user, "enduser")
    audit(user, "unverified-consent")
    warning = user.locator(".notice.warning").inner_text()
    assert "Unverified app" in warning
    assert "sent back to 127.0.0.1:33418" in user.inner_text("main")
    assert f"same name as a verified app, “{NAME}”" in warning
    assert user.locator("img.app-logo").count() == 0
    assert user.locator(".badge.approved").count() == 0
    assert user.locator(".badge.unverified").inner_text() == "Unverified"
    # Nothing of the page is wider than the phone's screen.
    assert user.evaluate("document.documentElement.scrollWidth") <= width

    admin = new_page(chromium, width=width, height=height)
    admin.goto(base + "/admin/")
    log_in(admin, "admin")
    audit(admin, "admin-index")
    with admin.expect_navigation():
        admin.get_by_role("link", name="1 self-registered client unverified").click()
    audit(admin, "admin-unverified-queue")
    assert admin.locator("#result_list tbody tr td.field-status_display").inner_text().startswith("Unverified")
    row = admin.locator("#result_list tbody tr")
    assert row.count() == 1
    assert f"named like “{NAME}”" in row.inner_text()
    with admin.expect_navigation():
        admin.get_by_role("link", name=NAME.lower()).click()
    audit(admin, "admin-unverified-client")
    assert "dynamic registration" in admin.inner_text(".field-self_registration")
    with admin.expect_navigation():
        admin.get_by_role("link", name="Approve…").click()
    audit(admin, "admin-approve-unverified")
    with admin.expect_navigation():
        admin.get_by_role("button", name=f"Yes, approve {NAME.lower()}").click()
    assert f"Approved {NAME.lower()}." in admin.inner_text(".messagelist")
    audit.assert_clean()
