"""What apps learn about the login: amr and acr in ID tokens (RFC 8176), acr_values step-up,
discovery's acr_values_supported, email_verified only for a proved address."""

import json

import pytest
from allauth.account.models import EmailAddress
from django.test import Client
from jwcrypto import jwk, jwt

from accounts.selectors import ACR_ONE_FACTOR, ACR_TWO_FACTORS
from signing.keys import signing_key_create
from tests.accounts.helpers import log_in, next_totp_code, second_step, totp_activate
from tests.oauthflows.helpers import AUTHORIZE, authorize_url, consent, exchange, query_of


@pytest.fixture(autouse=True)
def signing_key(db):
    return signing_key_create(algorithm="RS256")


def id_token_claims(browser, app, **params) -> dict:
    client, secret = app
    response = consent(browser, authorize_url(client, scope="openid email", **params))
    assert response.status_code == 302, response.content[:300]
    code = query_of(response["Location"])["code"]
    api = Client()
    answer = exchange(api, client, code, secret=secret).json()
    key_set = jwk.JWKSet.from_json(api.get("/.well-known/jwks.json").content)
    claims = json.loads(jwt.JWT(key=key_set, jwt=answer["id_token"], expected_type="JWS").claims)
    claims["_userinfo"] = api.get(
        "/v2/auth/oauth2/userinfo", HTTP_AUTHORIZATION=f"Bearer {answer['access_token']}"
    ).json()
    return claims


def test_a_password_login_is_one_factor(app, end_user):
    browser, _ = log_in("enduser")
    claims = id_token_claims(browser, app)
    assert (claims["amr"], claims["acr"]) == (["pwd"], ACR_ONE_FACTOR)


def test_a_totp_login_is_two_factors(app, end_user, settings):
    settings.MFA_TOTP_TOLERANCE = 1  # the code typed at set-up is used up: the sign-in types the next
    setup, _ = log_in("enduser")
    secret = totp_activate(setup)
    browser, _ = log_in("enduser")
    second_step(browser, next_totp_code(secret))
    claims = id_token_claims(browser, app)
    assert (claims["amr"], claims["acr"]) == (["mfa", "otp", "pwd"], ACR_TWO_FACTORS)


def test_acr_values_asking_for_two_factors_asks_for_the_second_then_comes_back(app, end_user, settings):
    settings.MFA_TOTP_TOLERANCE = 1  # the code typed at set-up is used up: the step-up types the next
    client, _ = app
    browser, _ = log_in("enduser")
    secret = totp_activate(browser)  # this session signed in with the password only
    url = authorize_url(client, scope="openid", acr_values=ACR_TWO_FACTORS)
    step_up = browser.get(url)
    assert step_up.status_code == 302 and step_up["Location"].startswith("/accounts/2fa/reauthenticate/?next=")
    back = browser.post(step_up["Location"], {"code": next_totp_code(secret)})
    assert back.status_code == 302 and back["Location"].startswith(AUTHORIZE)
    claims = id_token_claims(browser, app, acr_values=ACR_TWO_FACTORS)
    assert claims["acr"] == ACR_TWO_FACTORS and "otp" in claims["amr"]


def test_acr_values_under_prompt_none_for_a_user_with_an_unused_second_factor_is_interaction_required(
    app, end_user, settings
):
    # It answered 500: the refusal was built without its client, and sent without the request.
    client, _ = app
    browser, _ = log_in("enduser")
    totp_activate(browser)  # this session signed in with the password only
    url = authorize_url(client, scope="openid", acr_values=ACR_TWO_FACTORS, prompt="none", state="s1")
    answer = browser.get(url)
    assert answer.status_code == 302, answer.content[:300]
    assert answer["Location"].startswith("https://app.example.com/cb?")
    params = query_of(answer["Location"])
    assert params["error"] == "interaction_required" and params["state"] == "s1"
    assert "acr_values" in params["error_description"]


def test_acr_values_for_a_user_without_a_second_factor_answers_one_factor(app, end_user):
    browser, _ = log_in("enduser")
    claims = id_token_claims(browser, app, acr_values=ACR_TWO_FACTORS)
    assert claims["acr"] == ACR_ONE_FACTOR


def test_discovery_lists_the_acr_values(db):
    document = Client().get("/.well-known/openid-configuration").json()
    assert document["acr_values_supported"] == [ACR_ONE_FACTOR, ACR_TWO_FACTORS]
    assert {"amr", "acr"} <= set(document["claims_supported"])


def test_email_verified_only_for_a_proved_address(app, end_user):
    browser, _ = log_in("enduser")
    assert id_token_claims(browser, app)["_userinfo"]["email_verified"] is False
    EmailAddress.objects.create(user=end_user, email=end_user.email, verified=True, primary=True)
    assert id_token_claims(browser, app)["_userinfo"]["email_verified"] is True
