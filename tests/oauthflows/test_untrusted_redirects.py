"""RFC 9700 §4.11.2 (issue 28, Medium 2): no automatic redirect to a redirect URI nobody reviewed.

The attack: register a client yourself with https://evil.example/phish as its redirect URI and use
this server's address to send people there (prompt=none with no session, an error while logged
in, RP-initiated logout). Each door, for an unverified client, ends at a page of ours naming the
app as unverified with the host as text; approved clients, and a pending client's signed-in owner,
keep RFC 6749's and OpenID Connect's redirects; after the consent page (its signed mark on the
POST) an unverified client's Deny and Allow redirect as usual.
"""

from urllib.parse import urlencode

import pytest
from django.test import Client

from oauthclients import services
from oauthclients.models import Grant, OAuthClient
from oauthflows.pages import consentshown
from tests.factories import PASSWORD, make_client
from tests.oauthflows.helpers import AUTHORIZE, authorize_url, consent, consent_form, pkce_pair, query_of

PHISH = "https://evil.example/phish"
LOGOUT = "/auth/oauth2/logout"


@pytest.fixture
def unverified_phish(db):
    return services.client_self_register(
        name="Totally Legit",
        kind="public",
        redirect_uris=[PHISH],
        post_logout_redirect_uris=["https://evil.example/bye"],
        scopes=["PROFILE_READ"],
        source=OAuthClient.RegistrationSource.DCR,
    ).client


@pytest.fixture
def approved_app(owner):
    return make_client(owner, redirect_uris=["https://app.example.com/cb"], approve=True).client


@pytest.fixture
def pending_app(owner):
    return make_client(owner, name="Work In Progress", redirect_uris=["https://wip.example.com/cb"]).client


def _challenge() -> str:
    return pkce_pair()[1]


def _assert_withheld(response, host="evil.example"):
    assert response.status_code == 400, response.content[:300]
    assert not response.has_header("Location")
    html = response.content.decode()
    assert host in html
    assert f'href="https://{host}' not in html  # the host as text, never a link
    return html


# --- door 1: prompt=none with no session ---------------------------------------------------------


def test_prompt_none_without_a_session_does_not_send_anyone_to_an_unverified_client(unverified_phish):
    url = authorize_url(unverified_phish, code_challenge=_challenge(), prompt="none")
    html = _assert_withheld(Client().get(url))
    assert "Totally Legit" in html and "unverified" in html
    assert "login_required" in html  # what the app would have been told, for its developer


def test_prompt_none_without_a_session_redirects_for_an_approved_client(approved_app):
    response = Client().get(authorize_url(approved_app, prompt="none"))
    assert response.status_code == 302
    assert response["Location"].startswith("https://app.example.com/cb?")
    assert query_of(response["Location"])["error"] == "login_required"


def test_prompt_none_without_a_session_does_not_redirect_for_a_pending_client(pending_app):
    html = _assert_withheld(Client().get(authorize_url(pending_app, prompt="none")), host="wip.example.com")
    assert "Work In Progress" not in html  # a pending client's name was never approved


# --- door 2: errors for a logged-in user, before the consent page --------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"scope": "PROFILE_READ BOOKING_WRITE"},  # invalid_scope: beyond the client and the ceiling
        {"scope": "NO_SUCH_SCOPE"},  # invalid_scope: unknown
        {"response_type": "token"},  # unsupported_response_type
        {"code_challenge": None},  # a public client without PKCE: invalid_request
        {"prompt": "none"},  # consent_required: never given before
    ],
    ids=["beyond", "unknown-scope", "response-type", "no-pkce", "consent-required"],
)
def test_errors_before_the_consent_page_are_a_page_for_an_unverified_client(browser, unverified_phish, params):
    url = authorize_url(unverified_phish, **({"code_challenge": _challenge()} | params))
    html = _assert_withheld(browser.get(url))
    assert "Unverified application" in html and "Totally Legit" in html


@pytest.mark.parametrize(
    "params, error",
    [
        ({"scope": "NO_SUCH_SCOPE"}, "invalid_scope"),
        ({"response_type": "token"}, "unsupported_response_type"),
    ],
)
def test_errors_still_redirect_for_an_approved_client(browser, approved_app, params, error):
    response = browser.get(authorize_url(approved_app, **params))
    assert response.status_code == 302
    assert query_of(response["Location"])["error"] == error


def test_a_pending_clients_signed_in_owner_keeps_the_error_redirects(owner, pending_app):
    browser = Client()
    assert browser.login(username=owner.username, password=PASSWORD)
    response = browser.get(authorize_url(pending_app, scope="NO_SUCH_SCOPE"))
    assert response.status_code == 302
    assert query_of(response["Location"])["error"] == "invalid_scope"


# --- after the consent page: its mark lets Allow and Deny redirect -------------------------------


def _allow_or_deny(decision: str, url: str) -> str:
    return url.replace(AUTHORIZE + "?", f"{AUTHORIZE}/{decision}?", 1)


def test_the_consent_page_of_an_unverified_client_carries_the_mark(browser, unverified_phish):
    page = browser.get(authorize_url(unverified_phish, code_challenge=_challenge()))
    assert page.status_code == 200
    assert consent_form(page.content.decode())


def test_an_approved_clients_consent_page_needs_no_mark(browser, approved_app):
    page = browser.get(authorize_url(approved_app, prompt="consent"))
    assert page.status_code == 200 and not consent_form(page.content.decode())


def test_deny_after_the_consent_page_redirects_with_access_denied(browser, unverified_phish):
    response = consent(browser, authorize_url(unverified_phish, code_challenge=_challenge()), decision="deny")
    assert response.status_code == 302 and response["Location"].startswith(PHISH + "?")
    assert query_of(response["Location"])["error"] == "access_denied"


def test_allow_after_the_consent_page_redirects_with_a_code(browser, unverified_phish):
    response = consent(browser, authorize_url(unverified_phish, code_challenge=_challenge()))
    assert response.status_code == 302 and "code" in query_of(response["Location"])


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_a_post_without_the_mark_is_a_page_and_makes_no_code(browser, unverified_phish, decision):
    url = authorize_url(unverified_phish, code_challenge=_challenge())
    assert browser.get(url).status_code == 200
    _assert_withheld(browser.post(_allow_or_deny(decision, url)))
    assert not Grant.objects.exists()


def test_a_mark_from_another_authorization_request_is_no_proof(browser, unverified_phish):
    challenge = _challenge()
    shown = authorize_url(unverified_phish, code_challenge=challenge, state="shown")
    mark = consent_form(browser.get(shown).content.decode())
    other = authorize_url(unverified_phish, code_challenge=challenge, state="other")
    _assert_withheld(browser.post(_allow_or_deny("allow", other), mark))
    assert not Grant.objects.exists()


def test_a_mark_from_another_session_is_no_proof(browser, end_user, unverified_phish):
    url = authorize_url(unverified_phish, code_challenge=_challenge())
    mark = consent_form(browser.get(url).content.decode())
    elsewhere = Client()
    assert elsewhere.login(username=end_user.username, password=PASSWORD)
    _assert_withheld(elsewhere.post(_allow_or_deny("allow", url), mark))


def test_an_old_mark_is_no_proof(browser, unverified_phish, monkeypatch):
    url = authorize_url(unverified_phish, code_challenge=_challenge())
    mark = consent_form(browser.get(url).content.decode())
    monkeypatch.setattr(consentshown, "CONSENT_PAGE_MAX_AGE", -1)
    _assert_withheld(browser.post(_allow_or_deny("deny", url), mark))


@pytest.mark.parametrize("mark", ["", "garbage", "x" * 5000, "a:b:c", "é" * 10])
def test_a_forged_mark_is_a_page_not_a_500(browser, unverified_phish, mark):
    url = authorize_url(unverified_phish, code_challenge=_challenge())
    _assert_withheld(browser.post(_allow_or_deny("allow", url), {"consent_shown": mark}))


# --- door 3: RP-initiated logout ------------------------------------------------------------------


def _logout_url(**params) -> str:
    return LOGOUT + "?" + urlencode(params)


@pytest.mark.parametrize("uri", [PHISH, "https://evil.example/bye"])
def test_logout_without_a_session_shows_a_page_for_an_unverified_client(unverified_phish, uri):
    response = Client().get(_logout_url(client_id=unverified_phish.client_id, post_logout_redirect_uri=uri, state="s"))
    assert response.status_code == 200 and not response.has_header("Location")
    html = response.content.decode()
    assert "You are logged out" in html and "Totally Legit" in html and "unverified" in html
    assert "evil.example" in html and 'href="https://evil.example' not in html


def test_logout_with_a_session_ends_it_and_shows_a_page_for_an_unverified_client(browser, unverified_phish):
    url = _logout_url(client_id=unverified_phish.client_id, post_logout_redirect_uri=PHISH)
    assert browser.get(url).status_code == 200  # the confirmation
    response = browser.post(
        LOGOUT, {"client_id": unverified_phish.client_id, "post_logout_redirect_uri": PHISH, "allow": "on"}
    )
    assert response.status_code == 200 and not response.has_header("Location")
    assert "You are logged out" in response.content.decode()
    assert "_auth_user_id" not in browser.session


def test_logout_without_a_session_redirects_for_an_approved_client(approved_app):
    response = Client().get(
        _logout_url(client_id=approved_app.client_id, post_logout_redirect_uri="https://app.example.com/cb")
    )
    assert response.status_code == 302 and response["Location"] == "https://app.example.com/cb"


def test_an_unregistered_uri_is_still_refused_for_an_unverified_client(unverified_phish):
    response = Client().get(
        _logout_url(client_id=unverified_phish.client_id, post_logout_redirect_uri="https://elsewhere.example/")
    )
    assert response.status_code == 400 and not response.has_header("Location")
