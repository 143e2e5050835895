"""What the developer pages show: copy buttons, required marks, links to the docs, cards on phones."""

import pytest
from bs4 import BeautifulSoup

from oauthclients.models import OAuthClient
from tests.factories import make_client
from tests.oauthclients.pages import registration_data, shown_secret, url

pytestmark = pytest.mark.django_db


def soup(response) -> BeautifulSoup:
    assert response.status_code == 200
    return BeautifulSoup(response.content, "html.parser")


def test_client_id_and_new_secret_have_copy_buttons_that_need_javascript(client, owner):
    client.force_login(owner)
    page, plaintext = shown_secret(client, client.post(url("client_create"), registration_data()))
    html = soup(page)

    secret = html.select_one("#new-secret")
    assert secret["value"] == plaintext and secret.has_attr("readonly") and "mono" in secret["class"]
    buttons = {button["data-copy-target"]: button for button in html.select("button[data-copy-target]")}
    assert set(buttons) == {"new-secret", "client-id"}
    # Hidden until static/js/enhance.js reveals them; without JavaScript the values stay selectable.
    assert all(button.has_attr("hidden") and button["type"] == "button" for button in buttons.values())
    assert html.select_one("#client-id").name == "code"
    assert html.select_one('script[src="/static/js/enhance.js"]') is not None


def test_required_fields_are_marked(client, owner):
    client.force_login(owner)
    html = soup(client.get(url("client_create")))

    marked = {label["for"] for label in html.select("label") if label.select_one(".required")}
    assert marked == {"id_name", "id_purpose", "id_website_url", "id_redirect_uris"}
    assert html.select_one("fieldset.scopes > legend .required") is not None
    assert html.select_one("#id_purpose").has_attr("required")  # reviewers read it: the CLI requires it too


@pytest.mark.parametrize("page", ["client_list", "client_create", "client_detail", "client_update"])
def test_no_internal_references_and_links_to_the_docs(client, owner, page):
    created = make_client(owner, is_legacy=True)
    client.force_login(owner)
    response = client.get(url(page, created.client) if page in ("client_detail", "client_update") else url(page))

    content = response.content.decode()
    assert "spec §" not in content and "§" not in content
    if page in ("client_list", "client_detail"):
        links = [a["href"].split("?")[0] for a in soup(response).select("main a")]
        assert url("integration_guide") in links and "/v2/docs/" in links


def test_the_integration_guide_is_served_from_the_docs(client, owner):
    client.force_login(owner)
    html = soup(client.get(url("integration_guide")))

    assert html.select_one("article.doc h1").get_text() == "Integrating an application"
    assert html.select_one("article.doc table") is not None
    assert "/v2/docs/" in [a["href"] for a in html.select("main a")]


def test_tables_carry_labels_for_phone_cards(client, owner):
    created = make_client(owner)
    client.force_login(owner)

    listing = soup(client.get(url("client_list")))
    detail = soup(client.get(url("client_detail", created.client)))

    assert [td["data-label"] for td in listing.select("table.cards tbody tr")[0].select("td")] == [
        "Status",
        "Name",
        "Client ID",
        "Kind",
        "Created",
    ]
    assert [td.get("data-label") for td in detail.select("table.secrets.cards tbody tr")[0].select("td")][:4] == [
        "Secret",
        "Created",
        "Last used",
        "State",
    ]


def test_the_logo_can_be_uploaded_from_the_form(client, owner):
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (200, 200), (0, 90, 0)).save(out, format="JPEG")
    out.seek(0)
    out.name = "logo.jpg"
    client.force_login(owner)

    response = client.post(url("client_create"), {**registration_data(kind="public"), "logo": out})

    assert response.status_code == 303
    page = soup(client.get(response["Location"]))
    logo = page.select_one("h1 img.app-logo")
    # The owner's page shows the upload from an owner-only URL: users see a logo once it is approved.
    assert logo["src"].startswith(url("client_detail", OAuthClient.objects.get()) + "logo.png?v=")
    assert client.get(logo["src"]).content.startswith(b"\x89PNG")


def test_scope_resources_are_collapsed_unless_something_in_them_is_selected(client, owner):
    created = make_client(owner, scopes=["BOOKING_READ"])
    client.force_login(owner)

    html = soup(client.get(url("client_update", created.client)))

    boxes = {
        box.select_one("fieldset")["data-resource"]: (box.has_attr("open"), box.summary.get_text(" ", strip=True))
        for box in html.select("details.scope-resource-box")
    }
    assert boxes["BOOKING"] == (True, "Bookings 1 of 6 selected")
    assert boxes["PROFILE"] == (False, "Profile 0 of 6 selected")
    assert sum(is_open for is_open, _ in boxes.values()) == 1
