"""Swagger UI at /v2/docs/ authorizes with the authorization code flow and PKCE against this server,
as the API docs' public client, and then calls GET /v2/me with the token it got."""

import pytest
from drf_spectacular.settings import patched_settings

from oauthclients import services
from oauthclients.models import ClientKind, OAuthClient
from tests.browser.conftest import new_page
from tests.browser.test_journey import log_in
from tests.factories import make_user


@pytest.fixture
def docs_client(transactional_db, live_server, settings):
    """The docs page's client, as seed_demo registers it, for the live server's own origin."""
    settings.OAUTH_ISSUER = live_server.url
    admin = make_user("docsadmin", staff=True)
    created = services.client_create(
        owner=admin,
        actor=admin,
        name="API docs (Swagger UI)",
        purpose="Try the API from its documentation.",
        kind=ClientKind.PUBLIC,
        scopes=["PROFILE_READ", "PROFILE_WRITE"],
        redirect_uris=[live_server.url + "/v2/docs/oauth2-redirect.html"],
        website_url=live_server.url + "/v2/docs/",
    )
    OAuthClient.objects.filter(pk=created.client.pk).update(client_id=settings.OAUTH_DOCS_CLIENT_ID)
    services.client_approve(client=OAuthClient.objects.get(pk=created.client.pk), actor=admin)
    reader = make_user("reader")
    # drf-spectacular reads its settings once per process (no setting_changed receiver): patch them.
    patches = {
        "SWAGGER_UI_SETTINGS": {"oauth2RedirectUrl": live_server.url + "/v2/docs/oauth2-redirect.html"},
        "SERVERS": [{"url": live_server.url}],
    }
    with patched_settings(patches):
        yield reader


def test_swagger_ui_authorizes_with_pkce_and_calls_me(docs_client, live_server, chromium, screenshots):
    base = live_server.url
    page = new_page(chromium, width=1280)
    page.goto(base + "/accounts/login/?next=/v2/docs/")
    log_in(page, docs_client.username)
    page.wait_for_selector(".swagger-ui .btn.authorize")
    screenshots(page, "docs")

    page.click(".swagger-ui .btn.authorize")
    modal = page.locator(".swagger-ui .modal-ux")
    modal.wait_for()
    screenshots(page, "authorize-dialog")
    with page.expect_popup() as popup_info:
        modal.locator("button.authorize").first.click()
    popup = popup_info.value
    popup.wait_for_load_state()
    screenshots(popup, "consent")
    with popup.expect_event("close"):
        popup.click("text=Allow")
    modal.locator("button", has_text="Logout").first.wait_for()  # Swagger UI holds a token now
    screenshots(page, "authorized")
    modal.locator("button.close-modal").first.click()

    operation = page.locator("#operations-Profile-me_retrieve")
    operation.locator(".opblock-summary").click()
    operation.locator(".try-out__btn").click()
    operation.locator(".execute").click()
    status = operation.locator(".live-responses-table .response .response-col_status").first
    status.wait_for()
    screenshots(page, "me-called")
    assert status.inner_text().strip() == "200"
    assert '"username": "reader"' in operation.locator(".live-responses-table .microlight").first.inner_text()
