"""The login page says "Continue with NAME" for each identity provider, as docs/accounts.md says (not
allauth's "Or use a third-party" over a bare name); the link leads to the confirmation page, whose
button POSTs, and keeps the authorization request the person came with."""

import html
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client

from accounts.services import identity_provider_add


@pytest.fixture
def providers(db):
    for name, issuer in (("Acme SSO", "https://sso.acme.example"), ("Globex", "https://login.globex.example")):
        identity_provider_add(
            name=name, issuer=issuer, client_id="sched", client_secret="s" * 24, domains=[], enforce=False
        )


def links(page) -> dict[str, str]:
    """Link text -> href, for the provider links on the page."""
    found = re.findall(r'<a class="button secondary" href="([^"]+)">([^<]+)</a>', page.content.decode())
    return {html.unescape(text): html.unescape(href) for href, text in found}


def test_each_provider_is_continue_with_its_name(providers):
    page = Client().get("/accounts/login/")
    text = page.content.decode()
    assert "Or use a third-party" not in text
    shown = links(page)
    assert set(shown) == {"Continue with Acme SSO", "Continue with Globex"}
    href = urlsplit(shown["Continue with Acme SSO"])
    assert href.path == "/accounts/oidc/acme-sso/login/" and parse_qs(href.query) == {"process": ["login"]}
    # The confirmation it leads to says the same, and POSTs.
    confirmation = Client().get(shown["Continue with Acme SSO"]).content.decode()
    assert "Continue with Acme SSO</button>" in confirmation and 'method="post"' in confirmation


def test_the_link_keeps_the_request_to_come_back_to(providers):
    authorize = "/auth/oauth2/authorize?" + urlencode({"client_id": "abc", "scope": "PROFILE_READ"})
    page = Client().get("/accounts/login/?" + urlencode({"next": authorize}))
    query = parse_qs(urlsplit(links(page)["Continue with Globex"]).query)
    assert query["next"] == [authorize]


def test_without_providers_the_page_offers_none(db):
    page = Client().get("/accounts/login/")
    assert "Continue with" not in page.content.decode() and not links(page)
