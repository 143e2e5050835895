"""The pages in another language and in the other direction, as a person on a phone meets them:
German, and Arabic right to left (switched on here as it will be once its catalogue is complete),
at 1280 and 390 px: reached from an app that sent ui_locales, axe-clean, no horizontal scroll."""

from urllib.parse import urlencode

import pytest

from tests.browser.conftest import new_page
from tests.browser.test_journey import log_in
from tests.browser.test_journeys import VIEWPORTS, Audit
from tests.factories import make_client, make_user

pytestmark = pytest.mark.django_db(transaction=True)

ARABIC = ("ar", "العربية")


@pytest.fixture
def cast(transactional_db, settings):
    settings.LANGUAGES = [*settings.LANGUAGES, ARABIC]
    developer = make_user("developer")
    make_user("enduser")
    client = make_client(developer, name="Team Planner", approve=True).client
    return {"client_id": client.client_id, "redirect_uri": client.redirect_uri_list[0]}


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize(("language", "direction", "allow"), [("ar", "rtl", "Allow"), ("de", "ltr", "Erlauben")])
def test_the_consent_journey_in_another_language(
    cast, live_server, chromium, screenshots, viewport, language, direction, allow
):
    width, height = VIEWPORTS[viewport]
    base = live_server.url
    audit = Audit(screenshots)
    query = {
        "client_id": cast["client_id"],
        "redirect_uri": cast["redirect_uri"],
        "response_type": "code",
        "scope": "PROFILE_READ BOOKING_READ",
        "state": "s",
        "ui_locales": f"tlh {language}",
    }
    page = new_page(chromium, width=width, height=height)
    page.goto(base + "/auth/oauth2/authorize?" + urlencode(query))
    assert page.get_attribute("html", "lang") == language and page.get_attribute("html", "dir") == direction
    audit(page, f"{language}-login")
    assert no_horizontal_scroll(page)
    log_in(page, "enduser")
    assert page.get_attribute("html", "dir") == direction
    audit(page, f"{language}-consent")
    assert no_horizontal_scroll(page)
    page.locator("ul.resources summary").first.click()
    audit(page, f"{language}-consent-details")
    assert no_horizontal_scroll(page)
    assert page.get_by_role("button", name=allow, exact=True).count() == 1
    # Pages outside the login follow the person, not the app: the browser's language here (English).
    for path in ("/settings/apps/", "/accounts/security/", "/accounts/language/", "/accounts/2fa/webauthn/add/"):
        page.goto(base + path)
        audit(page, f"{language}-after{path.replace('/', '-')}")
        assert no_horizontal_scroll(page), path
    # The person chooses the language for every page of theirs.
    page.goto(base + "/accounts/language/")
    page.check(f"input[name=language][value={language}]")
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert page.get_attribute("html", "lang") == language and page.get_attribute("html", "dir") == direction
    for path in ("/settings/apps/", "/settings/developer/", "/accounts/2fa/webauthn/add/", "/accounts/security/"):
        page.goto(base + path)
        assert page.get_attribute("html", "dir") == direction
        audit(page, f"{language}-chosen{path.replace('/', '-')}")
        assert no_horizontal_scroll(page), path
    page.context.close()
    audit.assert_clean()
