"""Forms keep working under Referrer-Policy: no-referrer, and CSRF still holds."""

import pytest
from django.test import Client

from tests.factories import PASSWORD


def login_post(client: Client, token: str | None, **headers):
    data = {"username": "enduser", "password": PASSWORD}
    if token:
        data["csrfmiddlewaretoken"] = token
    return client.post("/accounts/login/", data, **headers)


@pytest.fixture
def browser_and_csrf_token(end_user):
    client = Client(enforce_csrf_checks=True)
    client.get("/accounts/login/")
    return client, client.cookies["csrftoken"].value


def test_a_no_referrer_same_origin_post_with_token_is_accepted(browser_and_csrf_token):
    client, token = browser_and_csrf_token
    # What Chromium sends for a same-origin form POST from a no-referrer page.
    response = login_post(client, token, HTTP_ORIGIN="null", HTTP_SEC_FETCH_SITE="same-origin")
    assert response.status_code == 302


def test_the_same_post_over_https_without_referer_is_accepted(browser_and_csrf_token):
    client, token = browser_and_csrf_token
    response = login_post(client, token, HTTP_ORIGIN="null", HTTP_SEC_FETCH_SITE="same-origin", secure=True)
    assert response.status_code == 302


@pytest.mark.parametrize("site", ["cross-site", "same-site", "none", None])
def test_origin_null_from_anywhere_else_is_refused(browser_and_csrf_token, site):
    client, token = browser_and_csrf_token
    headers = {"HTTP_ORIGIN": "null"}
    if site:
        headers["HTTP_SEC_FETCH_SITE"] = site
    assert login_post(client, token, **headers).status_code == 403


def test_a_missing_referer_over_https_is_refused_without_fetch_metadata(browser_and_csrf_token):
    client, token = browser_and_csrf_token
    assert login_post(client, token, secure=True).status_code == 403


def test_the_token_is_still_required(browser_and_csrf_token):
    client, _ = browser_and_csrf_token
    assert login_post(client, None, HTTP_ORIGIN="null", HTTP_SEC_FETCH_SITE="same-origin").status_code == 403


def test_a_foreign_origin_is_refused(browser_and_csrf_token):
    client, token = browser_and_csrf_token
    response = login_post(client, token, HTTP_ORIGIN="https://evil.example.com", HTTP_SEC_FETCH_SITE="same-origin")
    assert response.status_code == 403
