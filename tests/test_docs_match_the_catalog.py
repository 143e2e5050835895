"""Every scope and endpoint the docs name exists: in the scope catalog, and in the routes of the
authorization server or of the example bookings service (first-hour finding 3)."""

import re
from pathlib import Path

import pytest
from django.urls import Resolver404, get_resolver

from scopes.catalog import SCOPES

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
SCOPE_NAME = re.compile(r"\b(?:(?:ORG|TEAM)_)?[A-Z]+(?:_[A-Z]+)*_(?:READ|WRITE)\b")
ENDPOINT = re.compile(r"\b(GET|POST|PATCH|PUT|DELETE) (/v2/[A-Za-z0-9_/{}<>.-]*)")
# Words shaped like scope names that are not scopes (environment variables, settings).
NOT_SCOPES = {"OAUTH_LOG_READ"}


def named(pattern, text):
    return set(pattern.findall(text))


@pytest.mark.parametrize("doc", DOCS, ids=[doc.name for doc in DOCS])
def test_every_scope_a_doc_names_is_in_the_catalog(doc):
    text = doc.read_text()
    unknown = {
        name
        for name in named(SCOPE_NAME, text) - NOT_SCOPES
        if name not in SCOPES and not name.startswith(("RATELIMIT_", "OAUTH_", "DJANGO_", "DATABASE_"))
    }
    assert not unknown, f"{doc.name} names scopes the catalog does not have: {sorted(unknown)}"


def resolves(path: str, urlconf: str) -> bool:
    concrete = re.sub(r"[{<][^}>]+[}>]", "1", path)
    try:
        get_resolver(urlconf).resolve(concrete)
    except Resolver404:
        return False
    return True


@pytest.mark.parametrize("doc", DOCS, ids=[doc.name for doc in DOCS])
def test_every_endpoint_a_doc_names_is_served(doc):
    missing = [
        f"{method} {path}"
        for method, path in named(ENDPOINT, doc.read_text())
        if not (resolves(path, "config.urls") or resolves(path, "examples.bookings_service.urls"))
    ]
    assert not missing, f"{doc.name} names endpoints nobody serves: {missing}"


def test_the_guide_no_longer_says_changing_bookings_needs_no_scope():
    guide = (ROOT / "docs" / "integrating.md").read_text()
    assert "`POST /v2/bookings`: adding a guest, confirming) needs `BOOKING_WRITE`" in guide
    assert "Creating, cancelling and rescheduling bookings need no scope" not in guide


def test_the_example_service_requires_what_the_docs_say():
    from examples.bookings_service.apis import BookingsApi, SlotsApi
    from scopes.declarations import is_public, required_scope

    assert required_scope(BookingsApi, "GET", "/v2/bookings", ()) == "BOOKING_READ"
    assert required_scope(BookingsApi, "POST", "/v2/bookings", ()) == "BOOKING_WRITE"
    assert is_public(SlotsApi)
