"""The four journeys of issue 13, at desktop (1280 px) and phone (390 px) width, with axe-core on every page.

1. A developer registers a client with a logo and copies its one-time secret.
2. An administrator approves it from the client's change page (Approve…, then the confirmation).
3. An end user reads the consent screen, allows, and later revokes the app under Connected apps.
4. The developer rotates the secret (generate, revoke the old one) and deletes the client.

Every page is saved as a screenshot (tests/browser/conftest.py: test-output/screenshots/, ignored by
git) and checked with axe-core (axe-playwright-python bundles it: nothing is downloaded). The test
fails on any violation, of any impact, listing them all with the page they were found on.
"""

import re
from urllib.parse import urlencode, urlsplit

import pytest
from django.conf import settings
from PIL import Image

from tests.browser.conftest import new_page
from tests.browser.test_journey import ThirdPartyApp, log_in

pytestmark = pytest.mark.django_db(transaction=True)

APP_NAME = "Team Planner"
SCOPES = ["PROFILE_READ", "BOOKING_READ", "BOOKING_WRITE", "ORG_BOOKING_READ"]
VIEWPORTS = {"desktop": (1280, 900), "phone": (390, 844)}


class Audit:
    """Screenshot and axe-core for every page the journeys reach; violations collected, not thrown."""

    def __init__(self, screenshots):
        from axe_playwright_python.sync_playwright import Axe

        self.axe = Axe()
        self.screenshots = screenshots
        self.results: list[tuple[str, int, str]] = []

    def __call__(self, page, name: str) -> None:
        self.screenshots(page, name)
        result = self.axe.run(page)
        violations = result.response["violations"]
        detail = "; ".join(
            f"{v['id']} ({v['impact']}): {', '.join(str(node['target']) for node in v['nodes'][:3])}"
            for v in violations
        )
        self.results.append((name, len(violations), detail))

    def assert_clean(self) -> None:
        bad = [f"{name}: {detail}" for name, count, detail in self.results if count]
        assert not bad, "axe-core violations:\n" + "\n".join(bad)


def logo_file(tmp_path) -> str:
    path = tmp_path / "planner-logo.png"
    Image.new("RGB", (256, 256), (35, 84, 214)).save(path, format="PNG")
    return str(path)


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_four_journeys_with_axe(people, live_server, chromium, screenshots, tmp_path, viewport):
    width, height = VIEWPORTS[viewport]
    base = live_server.url
    audit = Audit(screenshots)
    logo = logo_file(tmp_path)
    with ThirdPartyApp(base) as app:
        # 1. The developer registers the app with a logo and copies the one-time secret.
        dev = new_page(chromium, width=width, height=height)
        dev.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
        dev.goto(base + "/accounts/login/")
        audit(dev, "login")
        log_in(dev, "developer")
        assert urlsplit(dev.url).path == "/settings/apps/"  # no client yet: an end user's landing
        audit(dev, "connected-apps-empty")
        dev.goto(base + "/settings/developer/")
        audit(dev, "developer-no-clients")
        with dev.expect_navigation():
            dev.get_by_role("link", name="Register a new client").click()
        audit(dev, "register-form")
        dev.fill("#id_name", APP_NAME)
        dev.fill("#id_purpose", "Plans team schedules and books rooms.")
        dev.fill("#id_website_url", "https://planner.example.com")
        dev.fill("#id_privacy_policy_url", "https://planner.example.com/privacy")
        dev.set_input_files("#id_logo", logo)
        dev.fill("#id_redirect_uris", app.redirect_uri)
        # Resources are collapsed until opened; select-by-resource (JavaScript) for bookings.
        dev.locator("details.scope-resource-box:has(fieldset[data-resource=BOOKING]) > summary").click()
        dev.locator("fieldset[data-resource=BOOKING] .select-resource").click()
        for scope in ("TEAM_BOOKING_READ", "TEAM_BOOKING_WRITE", "ORG_BOOKING_WRITE"):
            dev.uncheck(f"#id_scopes_{scope}")
        dev.locator("details.scope-resource-box:has(fieldset[data-resource=PROFILE]) > summary").click()
        dev.check("#id_scopes_PROFILE_READ")
        with dev.expect_navigation():
            dev.locator("main form button[type=submit]").click()
        audit(dev, "registered-secret-once")
        assert dev.locator("h1 img.app-logo").count() == 1
        app.client_id = dev.locator("#client-id").inner_text().strip()
        app.client_secret = dev.input_value("#new-secret")
        assert re.fullmatch(r"cs_[A-Za-z0-9_-]{43}", app.client_secret)
        dev.get_by_role("button", name="Copy secret").click()
        assert dev.evaluate("navigator.clipboard.readText()") == app.client_secret
        assert "Copied" in dev.inner_text("#new-secret-copied")
        dev.reload()
        assert dev.locator("#new-secret").count() == 0  # shown once; the reload created nothing
        audit(dev, "client-page-after-reload")

        # 2. The administrator approves it from its change page.
        admin = new_page(chromium, width=width, height=height)
        admin.goto(base + "/admin/")
        audit(admin, "admin-login")
        log_in(admin, "admin")
        audit(admin, "admin-index")
        assert "1 OAuth client waiting for review" in admin.inner_text(".pending-queue")
        with admin.expect_navigation():
            admin.locator(".pending-queue a").click()
        audit(admin, "admin-pending-queue")
        with admin.expect_navigation():
            admin.get_by_role("link", name=APP_NAME).click()
        audit(admin, "admin-client-change-page")
        with admin.expect_navigation():
            admin.get_by_role("link", name="Approve…").click()
        audit(admin, "admin-approve-confirm")
        with admin.expect_navigation():
            admin.get_by_role("button", name=f"Yes, approve {APP_NAME}").click()
        audit(admin, "admin-approved")
        assert f"Approved {APP_NAME}." in admin.inner_text(".messagelist")
        # The review pages an administrator also meets: a filtered, searched changelist ("Show all"
        # beside the count), a reject confirmation (left with Cancel), the audit events.
        admin.goto(base + "/admin/oauthclients/oauthclient/?status__exact=rejected&q=Planner")
        assert "0 results" in admin.inner_text("#changelist-search")  # with "(1 total)", a link in the text
        audit(admin, "admin-changelist-filtered")
        admin.goto(base + "/admin/oauthclients/oauthclient/?status__exact=approved&q=Planner")
        audit(admin, "admin-changelist-searched")
        with admin.expect_navigation():
            admin.locator("#result_list").get_by_role("link", name=APP_NAME).click()
        with admin.expect_navigation():
            admin.get_by_role("link", name="Reject with a reason…").click()
        audit(admin, "admin-reject-confirm")
        admin.goto(base + "/admin/oauthclients/clientauditevent/")
        audit(admin, "admin-audit-events")

        # 3. The end user consents, then revokes.
        user = new_page(chromium, width=width, height=height)
        query = urlencode(
            {"client_id": app.client_id, "redirect_uri": app.redirect_uri, "scope": " ".join(SCOPES), "state": "s1"}
        )
        user.goto(f"{base}{settings.OAUTH_AUTHORIZE_PATH}?{query}")
        assert f"Log in to continue to {APP_NAME}" in user.inner_text("main h1")
        audit(user, "login-names-the-app")
        log_in(user, "enduser")
        assert "Signed in as enduser" in user.inner_text(".signed-in")
        user.locator("ul.resources summary").first.click()
        audit(user, "consent")
        with user.expect_navigation(url=re.compile(re.escape(app.redirect_uri) + r"\?")):
            user.get_by_role("button", name="Allow", exact=True).click()
        assert app.callbacks[-1].get("me_status") == 200, app.callbacks[-1]
        user.goto(base + "/settings/apps/")
        audit(user, "connected-apps")
        with user.expect_navigation():
            user.get_by_role("link", name="Revoke access…").click()
        audit(user, "revoke-confirm")
        with user.expect_navigation():
            user.locator("main").get_by_role("button", name="Revoke access", exact=True).click()
        audit(user, "revoked")
        assert f"{APP_NAME} no longer has access" in user.inner_text(".messages")

        # 4. The developer rotates the secret and deletes the client.
        dev.goto(base + "/settings/developer/")
        audit(dev, "developer-client-list")
        with dev.expect_navigation():
            dev.get_by_role("link", name=APP_NAME).click()
        with dev.expect_navigation():
            dev.get_by_role("button", name="Generate new secret").click()
        audit(dev, "rotated-new-secret")
        assert dev.locator("#new-secret").count() == 1
        assert dev.get_by_role("button", name="Generate new secret").count() == 0  # at the limit
        assert "the most it can have" in dev.inner_text("#secret-limit")
        first_revoke = dev.locator("details.confirm").first
        first_revoke.locator("summary").click()
        audit(dev, "revoke-secret-confirm")
        with dev.expect_navigation():
            first_revoke.locator("button").click()
        audit(dev, "old-secret-revoked")
        with dev.expect_navigation():
            dev.get_by_role("link", name="Delete…").click()
        audit(dev, "delete-confirm")
        with dev.expect_navigation():
            dev.get_by_role("button", name=f"Delete {APP_NAME}").click()
        audit(dev, "deleted")
        assert f"{APP_NAME} is deleted." in dev.inner_text(".messages")
        dev.goto(base + "/settings/developer/docs/integrating/")
        audit(dev, "integration-guide")

    for name, count, _detail in audit.results:
        print(f"axe {viewport} {name}: {count} violations")  # noqa: T201 - the closing note's table
    audit.assert_clean()


def test_registering_works_without_javascript(people, live_server, chromium, screenshots):
    """The same form with JavaScript off: details open natively, no copy buttons, the secret still shown once."""
    context = chromium.new_context(viewport={"width": 390, "height": 844}, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(live_server.url + "/settings/developer/clients/new/")
    log_in(page, "developer")
    page.fill("#id_name", "No Script")
    page.fill("#id_purpose", "Checks that registration works without JavaScript.")
    page.fill("#id_website_url", "https://noscript.example.com")
    page.fill("#id_redirect_uris", "https://noscript.example.com/cb")
    page.locator("details.scope-resource-box:has(fieldset[data-resource=PROFILE]) > summary").click()
    # Select-by-resource needs JavaScript, so it is not offered.
    assert page.locator("fieldset[data-resource=PROFILE] .select-resource").is_hidden()
    page.check("#id_scopes_PROFILE_READ")
    with page.expect_navigation():
        page.locator("main form button[type=submit]").click()
    screenshots(page, "registered-without-javascript")
    assert page.input_value("#new-secret").startswith("cs_")
    assert page.locator("button[data-copy-target=new-secret]").is_hidden()
    page.reload()
    assert page.locator("#new-secret").count() == 0
    context.close()
