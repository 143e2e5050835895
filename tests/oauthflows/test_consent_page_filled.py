"""The consent page kept and filled in (plumbing.pagecache) is the page Django renders.

Each variant of the page — approved, pending (its owner testing it), unverified and named like a
verified app, legacy (full access), OpenID Connect, bound to a resource server, a staff user, a
signed-in name or none, a name that needs escaping, right to left — is fetched twice: through the
kept page, and with the view rendering it in full by Django's `render()`. They must be the same
bytes but for what is random per render (the masked CSRF token, the consent page's mark).
"""

import re

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.shortcuts import render
from django.test import Client

from oauthclients import services
from oauthclients.models import ClientStatus
from plumbing import pagecache
from profiles.models import Profile
from tests.factories import make_client, make_user
from tests.oauthflows.helpers import authorize_url, pkce_pair
from tests.oauthflows.test_lookalike_names import registered

pytestmark = pytest.mark.django_db

RANDOM_PER_RENDER = [
    re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+(")'),
    re.compile(r'(name="consent_shown" value=")[^"]+(")'),
]


def normalized(html: bytes) -> str:
    text = html.decode()
    for pattern in RANDOM_PER_RENDER:
        text = pattern.sub(r"\1…\2", text)
    return text


def rendered_in_full(request, template_name, shared, slots):
    return render(request, template_name, {**shared, **slots})


def both(browser, url, monkeypatch, **headers) -> tuple[str, str]:
    """The page through the kept copy (asked twice: the second is filled from the copy), then in full."""
    pagecache.forget_pages()
    first = browser.get(url, **headers)
    kept = browser.get(url, **headers)
    assert first.status_code == kept.status_code == 200, kept.content[:300]
    assert len(pagecache._kept) == 1, "the second request was not filled from the kept page"
    with monkeypatch.context() as patch:
        patch.setattr("oauthflows.pages.views.render_filled", rendered_in_full)
        full = browser.get(url, **headers)
    assert full.status_code == 200
    assert normalized(first.content) == normalized(kept.content)
    return normalized(kept.content), normalized(full.content)


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_an_approved_app_with_every_fact(browser, end_user, owner, monkeypatch):
    Profile.objects.create(user=end_user, name="Erin <User> & Co")
    client = make_client(owner, name="Planner & <Co>", purpose="Plans\nyour week.", approve=True).client
    kept, full = both(browser, authorize_url(client, scope="PROFILE_READ BOOKING_READ"), monkeypatch)
    assert kept == full
    assert "Erin &lt;User&gt; &amp; Co" in kept and "Planner &amp; &lt;Co&gt;" in kept


def test_a_username_that_needs_escaping_and_no_profile_name(owner, monkeypatch):
    user = make_user('o"brien<b>')
    client = make_client(owner, approve=True).client
    kept, full = both(signed_in(user), authorize_url(client), monkeypatch)
    assert kept == full
    assert "o&quot;brien&lt;b&gt;" in kept and 'o"brien<b>' not in kept


def test_a_staff_user_sees_the_admin_link_in_the_kept_page_too(owner, monkeypatch):
    staff = make_user("staffer", staff=True)
    client = make_client(owner, approve=True).client
    kept, full = both(signed_in(staff), authorize_url(client), monkeypatch)
    assert kept == full and 'href="/admin/"' in kept


def test_the_owner_testing_a_pending_client(owner, monkeypatch):
    client = make_client(owner).client
    kept, full = both(signed_in(owner), authorize_url(client), monkeypatch)
    assert kept == full and 'class="notice info"' in kept


def test_a_legacy_app_asking_for_full_access(browser, owner, monkeypatch):
    client = make_client(owner, is_legacy=True, approve=True).client
    kept, full = both(browser, authorize_url(client, scope=None), monkeypatch)
    assert kept == full and 'class="notice danger"' in kept


def test_openid_connect_and_a_resource_server(browser, owner, reviewer, monkeypatch):
    resource = services.resource_server_create(
        owner=reviewer, name="Bookings <API>", resource_uri="https://bookings.example.com/v2", actor=reviewer
    ).client
    client = make_client(owner, approve=True).client
    url = authorize_url(
        client,
        scope="openid profile email BOOKING_READ",
        nonce="n-1",
        code_challenge=pkce_pair()[1],
        code_challenge_method="S256",
        resource=resource.resource_uri,
    )
    kept, full = both(browser, url, monkeypatch)
    assert kept == full and 'id="identity-title"' in kept and "Bookings &lt;API&gt;" in kept


def test_an_unverified_look_alike_in_arabic(api, browser, owner, monkeypatch):
    make_client(owner, name="Google Calendar", approve=True)
    lookalike = registered(api, "G\u043e\u043egle Calendar")
    assert lookalike.status == ClientStatus.UNVERIFIED
    url = authorize_url(lookalike, code_challenge=pkce_pair()[1], code_challenge_method="S256", ui_locales="ar")
    kept, full = both(browser, url, monkeypatch)
    assert kept == full
    assert 'dir="rtl"' in kept and 'class="lookalike"' in kept and 'class="mixed-script"' in kept


def test_one_persons_name_never_reaches_anothers_page(owner, monkeypatch):
    client = make_client(owner, approve=True).client
    url = authorize_url(client)
    pagecache.forget_pages()
    alice, bob = make_user("alice-only"), make_user("bob-only")
    Profile.objects.create(user=alice, name="Alice Private")
    first = signed_in(alice).get(url).content.decode()
    second = signed_in(bob).get(url).content.decode()
    assert "Alice Private" in first and "alice-only" in first
    assert "Alice" not in second and "alice-only" not in second and "bob-only" in second


def test_a_flash_message_is_shown_on_the_page_rendered_in_full(browser, owner, rf):
    client = make_client(owner, approve=True).client
    # As a redirect after messages.success() leaves it: in Django's message cookie.
    encoded = CookieStorage(rf.get("/"))._encode([Message(constants.SUCCESS, "Welcome back <b>")])
    browser.cookies[CookieStorage.cookie_name] = encoded
    pagecache.forget_pages()
    page = browser.get(authorize_url(client)).content.decode()
    assert "Welcome back &lt;b&gt;" in page
    assert pagecache._kept == {}, "a page with a flash message was kept"
    assert "Welcome back" not in browser.get(authorize_url(client)).content.decode()
