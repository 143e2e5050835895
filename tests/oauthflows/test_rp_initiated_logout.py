"""OpenID Connect RP-Initiated Logout 1.0: confirmation, registered URIs only, no 500, no open redirect."""

from urllib.parse import urlencode

import pytest
from django.test import Client

from signing.keys import signing_key_create
from tests.factories import make_client
from tests.oauthflows.helpers import exchange, get_code

LOGOUT = "/auth/oauth2/logout"


@pytest.fixture
def app_redirect_uris():
    return ["https://app.example.com/cb", "https://app.example.com/logged-out"]


@pytest.fixture
def id_token(browser, api, app):
    signing_key_create(algorithm="RS256")
    client, secret = app
    code = get_code(browser, client, scope="openid")
    return exchange(api, client, code, secret=secret).json()["id_token"]


def _logout_url(**params) -> str:
    return LOGOUT + "?" + urlencode(params)


def _logged_in(browser) -> bool:
    return "_auth_user_id" in browser.session


def test_the_user_confirms_then_is_logged_out_and_sent_to_the_registered_uri(browser, app, id_token):
    client, _secret = app
    url = _logout_url(id_token_hint=id_token, post_logout_redirect_uri="https://app.example.com/logged-out", state="st")
    page = browser.get(url)
    assert page.status_code == 200 and _logged_in(browser)
    html = page.content.decode()
    assert f"<bdi>{client.shown.name}</bdi> asks you to log out" in html
    assert page["X-Frame-Options"] == "DENY"
    form = page.context["form"].initial
    response = browser.post(LOGOUT, {**{k: v for k, v in form.items() if v}, "allow": "on"})
    assert response.status_code == 302
    assert response["Location"] == "https://app.example.com/logged-out?state=st"
    assert not _logged_in(browser)


def test_a_post_logout_uri_written_behind_the_reviews_back_opens_no_redirect(browser, app):
    client, _secret = app
    client.post_logout_redirect_uris = "https://elsewhere.example.com/"
    client.save(update_fields=["post_logout_redirect_uris"])
    url = _logout_url(client_id=client.client_id, post_logout_redirect_uri="https://elsewhere.example.com/")
    assert browser.get(url).status_code == 400


def test_the_client_id_alone_identifies_the_app(browser, app):
    client, _secret = app
    url = _logout_url(client_id=client.client_id, post_logout_redirect_uri="https://app.example.com/cb")
    assert browser.get(url).status_code == 200
    response = browser.post(
        LOGOUT,
        {"client_id": client.client_id, "post_logout_redirect_uri": "https://app.example.com/cb", "allow": "on"},
    )
    assert response["Location"] == "https://app.example.com/cb"


def test_not_confirming_keeps_the_session(browser, app):
    client, _secret = app
    response = browser.post(LOGOUT, {"client_id": client.client_id})
    assert response.status_code == 400 and _logged_in(browser)


@pytest.mark.parametrize(
    "uri", ["https://evil.example.com/", "https://app.example.com/logged-out/", "https://app.example.com/cb?x=1"]
)
def test_an_unregistered_post_logout_uri_is_an_error_page_and_no_redirect(browser, app, id_token, uri):
    response = browser.get(_logout_url(id_token_hint=id_token, post_logout_redirect_uri=uri))
    assert response.status_code == 400 and not response.has_header("Location")
    assert _logged_in(browser)


def test_a_post_logout_uri_without_a_client_is_refused(browser):
    response = browser.get(_logout_url(post_logout_redirect_uri="https://app.example.com/logged-out"))
    assert response.status_code == 400 and not response.has_header("Location")


@pytest.mark.parametrize("client_id", ["unknown", "x" * 300, "nul\x00byte"])
def test_an_unknown_client_id_is_an_error_page_not_a_500(browser, client_id):
    response = browser.get(_logout_url(client_id=client_id, post_logout_redirect_uri="https://a.example.com/"))
    assert response.status_code == 400


@pytest.mark.parametrize("hint", ["garbage", "a.b.c", "eyJhbGciOiJub25lIn0.e30.", "x" * 9000, "\x00"])
def test_a_malformed_id_token_hint_is_an_error_page_not_a_500(browser, db, hint):
    signing_key_create(algorithm="RS256")
    assert browser.post(LOGOUT, {"id_token_hint": hint, "allow": "on"}).status_code == 400
    # On a GET a very long one meets the query-string bound first (414).
    assert browser.get(_logout_url(id_token_hint=hint)).status_code in (400, 414)
    assert "_auth_user_id" in browser.session


def test_an_id_token_hint_of_another_client_is_refused(browser, app, id_token, owner):
    other = make_client(owner, name="Other", redirect_uris=["https://other.example.com/cb"], approve=True).client
    response = browser.get(_logout_url(id_token_hint=id_token, client_id=other.client_id))
    assert response.status_code == 400


def test_without_a_session_it_just_redirects_to_a_registered_uri(app, id_token):
    response = Client().get(
        _logout_url(id_token_hint=id_token, post_logout_redirect_uri="https://app.example.com/logged-out")
    )
    assert response.status_code == 302 and response["Location"] == "https://app.example.com/logged-out"


def test_logging_out_leaves_the_apps_tokens_alone(browser, api, app, id_token):
    from oauthclients.models import AccessToken

    before = AccessToken.objects.count()
    client, _secret = app
    browser.post(LOGOUT, {"client_id": client.client_id, "allow": "on"})
    assert AccessToken.objects.count() == before == 1


# --- post-logout redirect URIs, and a pending client's owner (issue 29) ---


def _app_with_post_logout_uri(owner, *, approve=True):
    from oauthclients import services

    return services.client_create(
        owner=owner,
        name="Signs You In",
        purpose="Signs users in.",
        website_url="https://signin.example.com",
        kind="confidential",
        redirect_uris=["https://signin.example.com/cb"],
        post_logout_redirect_uris=["https://signin.example.com/bye"],
        scopes=["PROFILE_READ"],
        approve=approve,
        actor=owner,
    ).client


def test_a_registered_post_logout_uri_of_an_approved_client_is_redirected_to(owner):
    client = _app_with_post_logout_uri(owner)
    response = Client().get(
        _logout_url(client_id=client.client_id, post_logout_redirect_uri="https://signin.example.com/bye", state="s")
    )
    assert response.status_code == 302 and response["Location"] == "https://signin.example.com/bye?state=s"


def test_a_pending_clients_owner_can_log_out_through_it(owner):
    client = _app_with_post_logout_uri(owner, approve=False)
    browser = Client()
    browser.force_login(owner)
    url = _logout_url(client_id=client.client_id, post_logout_redirect_uri="https://signin.example.com/bye")
    page = browser.get(url)
    assert page.status_code == 200 and "<bdi>Signs You In</bdi> asks you to log out" in page.content.decode()
    response = browser.post(
        LOGOUT,
        {"client_id": client.client_id, "post_logout_redirect_uri": "https://signin.example.com/bye", "allow": "on"},
    )
    assert response.status_code == 302 and response["Location"] == "https://signin.example.com/bye"
    assert "_auth_user_id" not in browser.session


def test_a_pending_client_is_unknown_to_everyone_but_its_owner(browser, owner):
    client = _app_with_post_logout_uri(owner, approve=False)
    for who in (browser, Client()):
        response = who.get(
            _logout_url(client_id=client.client_id, post_logout_redirect_uri="https://signin.example.com/bye")
        )
        assert response.status_code == 400 and not response.has_header("Location")
        assert "Signs You In" not in response.content.decode()
