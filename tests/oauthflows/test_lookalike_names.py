"""Look-alike names (issue "Doors anyone can walk through", Low 6; docs/agents.md).

With "Google Calendar" approved, the red team registered `Gооgle Calendar` (Cyrillic о),
`Gοοgle Calendar` (Greek ο) and `Google\u3164Calendar` (a Hangul filler, drawn blank, counted as a
letter): all three reached the consent page with no warning. Names are now compared by their
UTS #39 confusable skeleton (oauthclients.validators.name_skeleton, stored and indexed), invisible
and filler characters are refused at every registration door, and a mixed-script name is flagged on
the consent page itself.
"""

import pytest
from bs4 import BeautifulSoup
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from oauthclients import services
from oauthclients.models import ClientStatus, OAuthClient
from tests.factories import make_client
from tests.oauthclients.pages import registration_data
from tests.oauthclients.pages import url as developer_url
from tests.oauthflows.helpers import authorize_url, exchange, get_code, pkce_pair
from tests.oauthflows.test_registration import agent_metadata, assert_registration_error, register, tokens_for

VERIFIED = "Google Calendar"
CYRILLIC = "G\u043e\u043egle Calendar"  # Gооgle: two Cyrillic о
GREEK = "G\u03bf\u03bfgle Calendar"  # Gοοgle: two Greek omicrons
HANGUL_FILLER = "Google\u3164Calendar"  # shown as "Google Calendar"


@pytest.fixture
def verified_app(owner):
    return make_client(owner, name=VERIFIED, approve=True).client


def registered(api, name, **extra) -> OAuthClient:
    response = register(api, agent_metadata(client_name=name, **extra))
    assert response.status_code == 201, response.content
    return OAuthClient.objects.get(client_id=response.json()["client_id"])


def consent_page(browser, client) -> BeautifulSoup:
    response = browser.get(authorize_url(client, scope="PROFILE_READ", code_challenge=pkce_pair()[1], prompt="consent"))
    assert response.status_code == 200, response.content[:300]
    return BeautifulSoup(response.content, "html.parser")


@pytest.mark.parametrize("name", [CYRILLIC, GREEK], ids=["cyrillic", "greek"])
def test_a_homoglyph_name_is_flagged_on_the_consent_page_as_the_verified_app_and_as_mixed_script(
    api, browser, verified_app, name
):
    page = consent_page(browser, registered(api, name))

    lookalike = page.select_one(".notice.warning .lookalike")
    assert lookalike is not None, "no look-alike warning"
    assert f"“{VERIFIED}”" in lookalike.get_text()
    mixed = page.select_one(".notice.warning .mixed-script")
    assert mixed is not None, "no mixed-script warning"
    assert name.split()[0] in mixed.get_text()


def test_digits_for_letters_are_a_look_alike_too(api, browser, verified_app):
    page = consent_page(browser, registered(api, "G00gle calendar"))
    assert f"“{VERIFIED}”" in page.select_one(".lookalike").get_text()
    assert page.select_one(".mixed-script") is None  # one script: only the skeleton catches it


def test_an_honest_name_gets_neither_warning(api, browser, verified_app):
    page = consent_page(browser, registered(api, "Calendar Sync"))
    assert page.select_one(".notice.warning") is not None  # still unverified
    assert page.select_one(".lookalike") is None
    assert page.select_one(".mixed-script") is None


def test_a_japanese_name_mixing_han_and_kana_is_one_script(api, browser, verified_app):
    page = consent_page(browser, registered(api, "予定カレンダー"))
    assert page.select_one(".mixed-script") is None


def test_the_hangul_filler_name_is_refused_at_registration_as_invalid_client_metadata(api, db, verified_app):
    description = assert_registration_error(
        register(api, agent_metadata(client_name=HANGUL_FILLER)), "invalid_client_metadata"
    )
    assert "client_name" in description
    assert "U+3164" in description
    assert not OAuthClient.objects.filter(status=ClientStatus.UNVERIFIED).exists()


@pytest.mark.parametrize("invisible", ["\u200b", "\u2060", "\ufe0f", "\u115f", "\uffa0", "\u2800", "\u00ad"])
def test_every_invisible_or_blank_looking_character_is_refused_in_a_name(api, db, invisible):
    assert_registration_error(
        register(api, agent_metadata(client_name=f"Google{invisible}Calendar")), "invalid_client_metadata"
    )


def test_the_developer_form_refuses_the_hangul_filler(client, owner):
    client.force_login(owner)
    response = client.post(developer_url("client_create"), registration_data(name=HANGUL_FILLER))
    assert response.status_code == 200
    assert "U+3164" in " ".join(response.context["form"].errors["name"])
    assert not OAuthClient.objects.filter(user=owner).exists()


def test_the_admin_add_form_refuses_the_hangul_filler(client, reviewer, owner):
    client.force_login(reviewer)
    data = {
        "owner": owner.pk,
        "name": HANGUL_FILLER,
        "client_type": "confidential",
        "redirect_uris": "https://admin-made.example.com/cb",
        "scopes": ["PROFILE_READ"],
        "website_url": "https://admin-made.example.com",
        "purpose": "Shows your bookings.",
    }
    response = client.post(reverse("admin:oauthclients_oauthclient_add"), data)
    assert response.status_code == 200
    assert "U+3164" in " ".join(response.context["form"].errors["name"])
    assert not OAuthClient.objects.filter(user=owner).exists()


def test_a_filler_name_stored_before_the_rule_is_still_flagged(api, browser, verified_app):
    # A row written before the rule existed (kept by the data migration): its skeleton ignores the filler.
    client = registered(api, "Placeholder")
    client.name = HANGUL_FILLER
    client.save()
    page = consent_page(browser, client)
    assert f"“{VERIFIED}”" in page.select_one(".lookalike").get_text()
    assert page.select_one(".mixed-script") is not None  # Hangul with Latin


def test_connected_apps_calls_an_unverified_app_unverified_and_links_no_claimed_website(api, browser, verified_app):
    client = registered(api, CYRILLIC, client_uri="https://phish.example/")
    tokens_for(browser, api, client)
    page = BeautifulSoup(browser.get("/settings/apps/").content, "html.parser")
    section = next(card for card in page.select("section.card") if CYRILLIC in card.get_text())
    assert section.select_one(".badge.unverified").get_text() == "Unverified"
    assert "https://phish.example/" in section.get_text()  # shown as its claim …
    assert section.select_one('a[href^="https://phish.example"]') is None  # … never as a checked link
    assert "not checked" in section.get_text()


def test_connected_apps_links_an_approved_apps_website(api, browser, confidential):
    app, secret = confidential
    assert exchange(api, app, get_code(browser, app), secret=secret).status_code == 200
    page = BeautifulSoup(browser.get("/settings/apps/").content, "html.parser")
    assert page.select_one(f'a[href="{app.shown.website_url}"]') is not None
    assert page.select_one(".badge.unverified") is None


# --- the admin's unverified queue: one query for every row's look-alike ---


def _queue(staff):
    with CaptureQueriesContext(connection) as queries:
        response = staff.get(reverse("admin:oauthclients_oauthclient_changelist"), {"status__exact": "unverified"})
    assert response.status_code == 200
    return response, len(queries)


def test_the_unverified_queue_costs_the_same_queries_for_3_rows_as_for_30(client, reviewer, owner, api, db):
    client.force_login(reviewer)
    for n in range(10):
        make_client(owner, name=f"Verified App {n}", approve=True)

    def add(count, start):
        for n in range(start, start + count):
            # Every other one is named like a verified app (Cyrillic е for e), so the lookup matches.
            name = f"Verified App {n % 10}".replace("e", "\u0435") if n % 2 else f"Other App {n}"
            services.client_self_register(
                name=name,
                kind="public",
                redirect_uris=[f"http://127.0.0.1:{9000 + n}/cb"],
                scopes=["PROFILE_READ"],
                source="dcr",
            )

    add(3, 0)
    response, few = _queue(client)
    assert response.content.decode().count("named like") == 1
    add(27, 3)
    response, many = _queue(client)
    assert response.content.decode().count("named like") == 15
    assert many == few, f"{few} queries for 3 rows, {many} for 30"
