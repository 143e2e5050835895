"""The default cache moves into the database on PostgreSQL without Redis (plumbing.sharedcache, for
allauth's security state); the token, introspection, revocation, userinfo and authorization hot
paths pay nothing for it: none of their statements touches its table (issue "The front door holds",
Low 7, under the budget of docs/performance.md)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from plumbing.sharedcache import TABLE, shared_cache_forget
from tests.factories import make_resource_server
from tests.oauthflows.helpers import (
    AUTHORIZE,
    INTROSPECT,
    REVOKE,
    asking_again,
    authorize_url,
    basic,
    client_post,
    consent_form,
    exchange,
    me,
    refresh,
)


@pytest.fixture
def production_caches(settings):
    """The caches as config/settings.py lays them out on PostgreSQL without Redis: the default one in
    the table, the limiter's counters apart (in-process here: the counter table has its own tests)."""
    settings.CACHES = {
        "default": {"BACKEND": "plumbing.sharedcache.SharedStateCache"},
        "ratelimit": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "hot-paths"},
    }
    settings.RATELIMIT_CACHE = "ratelimit"
    shared_cache_forget()
    yield
    shared_cache_forget()


def statements_on_the_table(call) -> tuple[object, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = call()
    return response, [query["sql"] for query in captured.captured_queries if TABLE in query["sql"]]


def test_the_hot_paths_never_touch_the_shared_cache_table(production_caches, browser, api, confidential, reviewer):
    client, secret = confidential
    server = make_resource_server(reviewer)
    url = authorize_url(client)
    # The consent page, then Allow (a first consent, then one that stands).
    page, touched = statements_on_the_table(lambda: browser.get(asking_again(url)))
    assert page.status_code == 200 and touched == []
    allow = asking_again(url).replace(AUTHORIZE + "?", AUTHORIZE + "/allow?", 1)
    answer, touched = statements_on_the_table(lambda: browser.post(allow, consent_form(page.content.decode())))
    assert answer.status_code == 302 and touched == []
    code = answer["Location"].split("code=")[1].split("&")[0]
    # A returning user with the consent standing: a code at once.
    again, touched = statements_on_the_table(lambda: browser.get(url))
    assert again.status_code == 302 and "code=" in again["Location"] and touched == []
    tokens, touched = statements_on_the_table(lambda: exchange(api, client, code, secret=secret))
    assert tokens.status_code == 200 and touched == []
    tokens = tokens.json()
    refreshed, touched = statements_on_the_table(lambda: refresh(api, client, tokens["refresh_token"], secret=secret))
    assert refreshed.status_code == 200 and touched == []
    access = refreshed.json()["access_token"]
    answer, touched = statements_on_the_table(lambda: me(api, access))
    assert answer.status_code == 200 and touched == []
    auth = basic(server.client.client_id, server.secret.plaintext)
    answer, touched = statements_on_the_table(
        lambda: client_post(api, INTROSPECT, server.client, {"token": access}, auth=auth)
    )
    assert answer.status_code == 200 and answer.json()["active"] is True and touched == []
    answer, touched = statements_on_the_table(
        lambda: client_post(api, REVOKE, client, {"token": access}, secret=secret)
    )
    assert answer.status_code == 200 and touched == []


def test_the_control_a_sign_in_with_a_code_does_use_the_table(db, production_caches, settings):
    # Without this, the test above could pass with the table never used at all.
    import pyotp
    from allauth.mfa.totp.internal.auth import TOTP
    from django.test import Client

    from tests.factories import PASSWORD, make_user

    settings.MFA_TOTP_TOLERANCE = 1
    user = make_user("totpuser")
    secret = pyotp.random_base32()
    TOTP.activate(user, secret)
    browser = Client()
    assert browser.post("/accounts/login/", {"login": "totpuser", "password": PASSWORD}).status_code == 302
    answer, touched = statements_on_the_table(
        lambda: browser.post("/accounts/2fa/authenticate/", {"code": pyotp.TOTP(secret).now()})
    )
    assert answer.status_code == 302 and any(sql.startswith("INSERT") for sql in touched), touched
