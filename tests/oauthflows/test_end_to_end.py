"""Whole journeys through HTTP: login form, consent, exchange, /v2/me, refresh (issue 3's bar)."""

import json
from io import StringIO

from django.core.management import call_command
from django.test import Client

from oauthclients import services
from tests.factories import PASSWORD
from tests.oauthflows.helpers import (
    authorize_url,
    consent,
    exchange,
    me,
    pkce_pair,
    query_of,
    refresh,
)


def login_through_the_form(url: str, user) -> Client:
    """A fresh browser follows the authorization URL, is sent to login, logs in, comes back."""
    browser = Client()
    to_login = browser.get(url)
    assert to_login.status_code == 302 and to_login["Location"].startswith("/accounts/login/")
    page = browser.get(to_login["Location"])
    assert page.status_code == 200
    logged_in = browser.post(to_login["Location"], {"username": user.username, "password": PASSWORD, "next": url})
    assert logged_in.status_code == 302 and logged_in["Location"] == url
    return browser


def authorize(browser, url) -> str:
    response = consent(browser, url)
    assert response.status_code == 302
    return query_of(response["Location"])["code"]


def test_confidential_client_through_a_secret_rotation(api, confidential, end_user, owner):
    client, first_secret = confidential
    url = authorize_url(client, scope="PROFILE_READ BOOKING_READ", state="abc")
    browser = login_through_the_form(url, end_user)

    # Before rotation: the first secret.
    tokens = exchange(api, client, authorize(browser, url), secret=first_secret).json()
    assert tokens["scope"] == "PROFILE_READ BOOKING_READ"
    assert me(api, tokens["access_token"]).json()["data"]["username"] == end_user.username

    # Rotation step a: a second secret; both work for exchange and refresh.
    second_secret = json.loads(_command("add-secret", client.client_id))["client_secret"]
    tokens = refresh(api, client, tokens["refresh_token"], secret=second_secret).json()
    assert me(api, tokens["access_token"]).status_code == 200
    tokens = refresh(api, client, tokens["refresh_token"], secret=first_secret).json()
    assert exchange(api, client, authorize(browser, url), secret=second_secret).status_code == 200

    # Step c: revoke the first; it fails at once, tokens stay valid, the second goes on.
    first_id = client.secrets.get(hint=first_secret[:7]).pk
    _command("revoke-secret", client.client_id, str(first_id))
    assert me(api, tokens["access_token"]).status_code == 200
    assert refresh(api, client, tokens["refresh_token"], secret=first_secret).status_code == 401
    assert exchange(api, client, authorize(browser, url), secret=first_secret).status_code == 401
    renewed = refresh(api, client, tokens["refresh_token"], secret=second_secret)
    assert renewed.status_code == 200 and me(api, renewed.json()["access_token"]).status_code == 200


def test_public_client_with_pkce(api, public, end_user):
    verifier, challenge = pkce_pair()
    url = authorize_url(public, scope="PROFILE_READ", code_challenge=challenge)
    browser = login_through_the_form(url, end_user)
    code = authorize(browser, url)
    assert exchange(api, public, code, verifier=pkce_pair()[0]).status_code == 400  # wrong verifier
    # A failed attempt does not consume the code... but it is single use once redeemed.
    tokens = exchange(api, public, code, verifier=verifier)
    assert tokens.status_code == 200, tokens.content
    tokens = tokens.json()
    assert me(api, tokens["access_token"]).status_code == 200
    renewed = refresh(api, public, tokens["refresh_token"])
    assert renewed.status_code == 200 and me(api, renewed.json()["access_token"]).status_code == 200
    assert exchange(api, public, code, verifier=verifier).status_code == 400


def test_legacy_client_through_both_migration_steps(api, legacy, end_user, owner):
    client, secret = legacy
    old_url = authorize_url(client, scope=None)
    browser = login_through_the_form(old_url, end_user)
    unrestricted = exchange(api, client, authorize(browser, old_url), secret=secret).json()
    assert unrestricted["scope"] == ""

    # Step a: the app adds scope to its authorization URL; new tokens carry only those scopes.
    new_url = authorize_url(client, scope="PROFILE_READ")
    scoped = exchange(api, client, authorize(browser, new_url), secret=secret).json()
    assert scoped["scope"] == "PROFILE_READ"
    assert (
        me(api, scoped["access_token"], method="patch", data={"name": "n"}, content_type="application/json").status_code
        == 403
    )

    # Step b: the scopes are selected on the client; the old URL now fails, the new one works.
    _command("set-scopes", client.client_id, "PROFILE_READ")
    error = query_of(browser.get(old_url)["Location"])
    assert error["error"] == "invalid_scope"
    assert exchange(api, client, authorize(browser, new_url), secret=secret).json()["scope"] == "PROFILE_READ"

    # Tokens issued before migration keep working, unrestricted, through refresh.
    renewed = refresh(api, client, unrestricted["refresh_token"], secret=secret).json()
    assert renewed["scope"] == ""
    assert (
        me(
            api, renewed["access_token"], method="patch", data={"name": "n"}, content_type="application/json"
        ).status_code
        == 200
    )


def test_rejecting_an_approved_client_stops_its_tokens_at_once(api, browser, confidential, reviewer):
    client, secret = confidential
    code = authorize(browser, authorize_url(client))
    tokens = exchange(api, client, code, secret=secret).json()
    assert me(api, tokens["access_token"]).status_code == 200
    services.client_reject(client=client, actor=reviewer, reason="Terms violation")
    response = me(api, tokens["access_token"])
    assert response.status_code == 401 and 'error="invalid_token"' in response["WWW-Authenticate"]


def test_get_absolute_url_is_the_owners_client_page(confidential):
    client, _ = confidential
    assert client.get_absolute_url() == f"/settings/developer/clients/{client.client_id}/"


def _command(*args) -> str:
    out = StringIO()
    call_command("oauthclient", *args, stdout=out)
    return out.getvalue()
