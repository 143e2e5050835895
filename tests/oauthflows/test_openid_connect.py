"""OpenID Connect (docs/openid-connect.md): ID tokens, discovery, prompt, max_age, login_hint, nonce."""

import base64
import hashlib
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from jwcrypto import jwk, jwt

from oauthclients.models import ClientStatus, Grant, IDToken
from oauthflows.pages.selectors import SESSION_AUTH_TIME_KEY
from signing import keys
from tests.factories import PASSWORD, make_client, make_user
from tests.oauthflows.helpers import (
    METADATA,
    authorize_url,
    consent,
    exchange,
    get_code,
    pkce_pair,
    query_of,
    refresh,
)

DISCOVERY = "/.well-known/openid-configuration"
USERINFO = "/v2/auth/oauth2/userinfo"


def _verified(id_token: str, api) -> tuple[dict, dict]:
    """The header and claims, after checking the signature against the published JWKS."""
    key_set = jwk.JWKSet.from_json(api.get("/.well-known/jwks.json").content)
    token = jwt.JWT(key=key_set, jwt=id_token, expected_type="JWS")
    return json.loads(token.header), json.loads(token.claims)


def _half_hash(value: str) -> str:
    digest = hashlib.sha256(value.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def _openid_tokens(browser, api, client, secret, *, nonce="n-0S6_WzA2Mj", scope="openid PROFILE_READ", **extra):
    code = get_code(browser, client, scope=scope, nonce=nonce, **extra)
    response = exchange(api, client, code, secret=secret)
    assert response.status_code == 200, response.content
    return response.json()


# --- discovery -------------------------------------------------------------------------------------


def test_discovery_names_this_servers_endpoints_and_algorithms(api):
    document = api.get(DISCOVERY).json()
    assert document["issuer"] == "http://testserver"
    assert document["authorization_endpoint"] == "http://testserver/auth/oauth2/authorize"
    assert document["token_endpoint"] == "http://testserver/v2/auth/oauth2/token"
    assert document["jwks_uri"] == "http://testserver/.well-known/jwks.json"
    assert document["userinfo_endpoint"] == "http://testserver" + USERINFO
    assert document["end_session_endpoint"] == "http://testserver/auth/oauth2/logout"
    assert document["id_token_signing_alg_values_supported"] == ["RS256", "ES256"]
    assert document["response_types_supported"] == ["code"]
    assert document["subject_types_supported"] == ["public"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert {"openid", "profile", "email", "PROFILE_READ"} <= set(document["scopes_supported"])
    assert {"sub", "auth_time", "nonce", "email", "zoneinfo", "locale"} <= set(document["claims_supported"])
    assert "HS256" not in json.dumps(document)


def test_the_rfc8414_metadata_names_userinfo_and_end_session_too(api):
    metadata = api.get(METADATA).json()
    assert metadata["userinfo_endpoint"] == "http://testserver" + USERINFO
    assert metadata["end_session_endpoint"] == "http://testserver/auth/oauth2/logout"
    assert "openid" not in metadata["scopes_supported"]  # the API's catalog; discovery adds OpenID's


# --- ID tokens ---------------------------------------------------------------------------------------


def test_an_openid_exchange_returns_an_rs256_id_token_signed_by_the_key_store(
    browser, api, app, end_user, signing_keys
):
    client, secret = app
    tokens = _openid_tokens(browser, api, client, secret)
    header, claims = _verified(tokens["id_token"], api)
    assert header == {"typ": "JWT", "alg": "RS256", "kid": signing_keys["RS256"].kid}
    assert claims["iss"] == "http://testserver"
    assert claims["aud"] == client.client_id
    assert claims["sub"] == str(end_user.pk)
    assert claims["nonce"] == "n-0S6_WzA2Mj"
    assert claims["at_hash"] == _half_hash(tokens["access_token"])
    assert abs(claims["auth_time"] - timezone.now().timestamp()) < 60
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["sid"] and len(claims["sid"]) >= 16
    # The same subject as introspection's, and the stored row holds the jti, never the token.
    stored = IDToken.objects.get()
    assert str(stored.jti) == claims["jti"] and stored.user == end_user


def test_an_es256_client_gets_es256_id_tokens(browser, api, owner, signing_keys):
    created = make_client(owner, redirect_uris=["https://es.example.com/cb"], approve=True)
    created.client.id_token_signed_response_alg = "ES256"
    created.client.save(update_fields=["id_token_signed_response_alg"])
    tokens = _openid_tokens(browser, api, created.client, created.secret.plaintext)
    header, _claims = _verified(tokens["id_token"], api)
    assert header["alg"] == "ES256" and header["kid"] == signing_keys["ES256"].kid


def test_without_openid_there_is_no_id_token(browser, api, app, signing_keys):
    client, secret = app
    code = get_code(browser, client, scope="PROFILE_READ", nonce="ignored")
    tokens = exchange(api, client, code, secret=secret).json()
    assert "id_token" not in tokens
    assert not IDToken.objects.exists()
    assert Grant.objects.get().nonce == ""  # a nonce without openid is not kept


def test_without_a_signing_key_the_exchange_is_refused_cleanly_and_the_code_survives(browser, api, app, db):
    client, secret = app
    code = get_code(browser, client, scope="openid", nonce="abc")
    refused = exchange(api, client, code, secret=secret)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_request"
    assert "no RS256 signing key" in refused.json()["error_description"]
    keys.signing_key_create(algorithm="RS256")
    assert "id_token" in exchange(api, client, code, secret=secret).json()


def test_a_replayed_code_gets_no_second_id_token(browser, api, app, signing_keys):
    client, secret = app
    code = get_code(browser, client, scope="openid", nonce="first-nonce")
    assert exchange(api, client, code, secret=secret).status_code == 200
    replay = exchange(api, client, code, secret=secret)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert IDToken.objects.count() == 1


def test_each_id_token_carries_its_own_requests_nonce(browser, api, app, signing_keys):
    client, secret = app
    first = _openid_tokens(browser, api, client, secret, nonce="nonce-one")
    second = _openid_tokens(browser, api, client, secret, nonce="nonce-two")
    assert _verified(first["id_token"], api)[1]["nonce"] == "nonce-one"
    assert _verified(second["id_token"], api)[1]["nonce"] == "nonce-two"
    third = _openid_tokens(browser, api, client, secret, nonce=None)
    assert "nonce" not in _verified(third["id_token"], api)[1]


@pytest.mark.parametrize("nonce", ["x" * 256, "bad\nnonce"])
def test_a_malformed_nonce_is_refused_at_the_redirect_uri(browser, app, nonce):
    client, _secret = app
    response = browser.get(authorize_url(client, scope="openid", nonce=nonce))
    assert response.status_code == 302
    assert query_of(response["Location"])["error"] == "invalid_request"


def test_a_refresh_keeps_openid_and_brings_no_new_id_token(browser, api, app, signing_keys):
    client, secret = app
    tokens = _openid_tokens(browser, api, client, secret)
    refreshed = refresh(api, client, tokens["refresh_token"], secret=secret)
    assert refreshed.status_code == 200
    assert "id_token" not in refreshed.json()
    assert refreshed.json()["scope"] == "openid PROFILE_READ"


def test_profile_and_email_need_openid(browser, app):
    client, _secret = app
    response = browser.get(authorize_url(client, scope="profile email"))
    assert query_of(response["Location"])["error"] == "invalid_scope"


def test_an_unverified_client_may_ask_for_openid_profile_and_email(browser, api, signing_keys):
    created = make_client(make_user("agentdev"), redirect_uris=["https://agent.example.com/cb"], approve=True)
    client = created.client
    client.status = ClientStatus.UNVERIFIED
    client.save(update_fields=["status"])
    tokens = _openid_tokens(browser, api, client, created.secret.plaintext, scope="openid profile email PROFILE_READ")
    assert tokens["scope"] == "openid profile email PROFILE_READ"
    refused = browser.get(authorize_url(client, scope="openid BOOKING_WRITE"))
    # Shown on our page, not redirected: the client is unverified (oauthclients.redirects).
    assert refused.status_code == 400 and "invalid_scope" in refused.content.decode()


def test_the_consent_page_says_it_will_sign_you_in(browser, app):
    client, _secret = app
    page = browser.get(authorize_url(client, scope="openid profile email PROFILE_READ")).content.decode()
    assert "Sign you in" in page
    assert "See your email address" in page
    assert "See your name, username, time zone and language" in page
    only_openid = browser.get(authorize_url(client, scope="openid")).content.decode()
    assert "Sign you in" in only_openid and "It will be able to:" not in only_openid
    plain = browser.get(authorize_url(client, scope="PROFILE_READ")).content.decode()
    assert "Sign you in" not in plain


# --- prompt, max_age, login_hint -----------------------------------------------------------------


def test_prompt_none_without_a_session_is_login_required_with_state_and_iss(app):
    client, _secret = app
    response = Client().get(authorize_url(client, scope="openid", prompt="none", state="s t&ate"))
    assert response.status_code == 302
    query = query_of(response["Location"])
    assert response["Location"].startswith("https://app.example.com/cb?")
    assert query["error"] == "login_required"
    assert query["state"] == "s t&ate" and query["iss"] == "http://testserver"


def test_prompt_none_without_a_session_and_an_unregistered_redirect_uri_is_an_error_page(app):
    client, _secret = app
    response = Client().get(
        authorize_url(client, scope="openid", prompt="none", redirect_uri="https://evil.example.com/cb")
    )
    assert response.status_code == 400 and not response.has_header("Location")


def test_prompt_none_without_standing_consent_is_consent_required(browser, app):
    client, _secret = app
    response = browser.get(authorize_url(client, scope="openid", prompt="none"))
    query = query_of(response["Location"])
    assert query["error"] == "consent_required" and query["state"] == "xyz" and query["iss"] == "http://testserver"


def test_prompt_none_with_standing_consent_issues_a_code_at_once(browser, api, app, signing_keys):
    client, secret = app
    get_code(browser, client, scope="openid PROFILE_READ")
    response = browser.get(authorize_url(client, scope="openid PROFILE_READ", prompt="none", nonce="again"))
    code = query_of(response["Location"])["code"]
    tokens = exchange(api, client, code, secret=secret).json()
    assert _verified(tokens["id_token"], api)[1]["nonce"] == "again"


def test_prompt_consent_shows_the_page_even_with_standing_consent(browser, app):
    client, _secret = app
    get_code(browser, client, scope="openid")
    assert browser.get(authorize_url(client, scope="openid")).status_code == 302  # covered: a code at once
    assert browser.get(authorize_url(client, scope="openid", prompt="consent")).status_code == 200


def test_prompt_login_asks_for_the_password_again_then_comes_back(browser, app, end_user):
    client, _secret = app
    url = authorize_url(client, scope="openid", prompt="login consent", login_hint=end_user.username)
    response = browser.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
    login_page = browser.get(response["Location"])
    next_url = login_page.context["next"]
    assert "prompt=consent" in next_url and "login" not in next_url.split("login_hint")[0]
    assert f'value="{end_user.username}"' in login_page.content.decode()  # login_hint prefilled
    credentials = {"username": end_user.username, "password": PASSWORD, "next": next_url}
    logged_in = browser.post("/accounts/login/", credentials)
    assert logged_in.status_code == 302 and logged_in["Location"] == next_url
    assert browser.get(next_url).status_code == 200  # the consent page (prompt=consent stayed)


def test_prompt_login_without_a_session_asks_for_the_password_once(app, end_user):
    client, _secret = app
    anonymous = Client()
    response = anonymous.get(authorize_url(client, scope="openid", prompt="login", max_age="0"))
    next_url = anonymous.get(response["Location"]).context["next"]
    assert "prompt" not in next_url and "max_age" not in next_url and "state=xyz" in next_url
    credentials = {"username": end_user.username, "password": PASSWORD, "next": next_url}
    assert anonymous.post("/accounts/login/", credentials)["Location"] == next_url
    assert anonymous.get(next_url).status_code == 200  # the consent page, not the login page again


@pytest.mark.parametrize("prompt", ["none login", "bogus", "login bogus"])
def test_a_bad_prompt_is_invalid_request(browser, app, prompt):
    client, _secret = app
    response = browser.get(authorize_url(client, scope="openid", prompt=prompt))
    assert query_of(response["Location"])["error"] == "invalid_request"


def _age_the_login(browser, seconds: int):
    session = browser.session
    session[SESSION_AUTH_TIME_KEY] = int((timezone.now() - timedelta(seconds=seconds)).timestamp())
    session.save()


def test_max_age_exceeded_forces_a_login_and_recent_enough_does_not(browser, api, app, end_user, signing_keys):
    client, secret = app
    get_code(browser, client, scope="openid")  # standing consent
    _age_the_login(browser, 600)
    fresh_enough = browser.get(authorize_url(client, scope="openid", max_age="3600"))
    assert "code" in query_of(fresh_enough["Location"])
    too_old = browser.get(authorize_url(client, scope="openid", max_age="300"))
    assert too_old["Location"].startswith("/accounts/login/?next=")
    next_url = browser.get(too_old["Location"]).context["next"]
    assert "max_age" not in next_url
    browser.post("/accounts/login/", {"username": end_user.username, "password": PASSWORD, "next": next_url})
    code = query_of(browser.get(next_url)["Location"])["code"]
    claims = _verified(exchange(api, client, code, secret=secret).json()["id_token"], api)[1]
    assert timezone.now().timestamp() - claims["auth_time"] < 60  # the new login's time


def test_max_age_exceeded_with_prompt_none_is_login_required(browser, app):
    client, _secret = app
    _age_the_login(browser, 600)
    response = browser.get(authorize_url(client, scope="openid", max_age="60", prompt="none"))
    assert query_of(response["Location"])["error"] == "login_required"


@pytest.mark.parametrize("max_age", ["-1", "abc", "1.5", "９"])
def test_a_bad_max_age_is_invalid_request(browser, app, max_age):
    client, _secret = app
    response = browser.get(authorize_url(client, scope="openid", max_age=max_age))
    assert query_of(response["Location"])["error"] == "invalid_request"


def test_the_auth_time_is_the_login_the_grant_recorded(browser, api, app, signing_keys):
    client, secret = app
    _age_the_login(browser, 1000)
    tokens = _openid_tokens(browser, api, client, secret)
    claims = _verified(tokens["id_token"], api)[1]
    assert 990 < timezone.now().timestamp() - claims["auth_time"] < 1100


def test_request_objects_are_refused_with_their_own_errors(browser, app):
    client, _secret = app
    assert query_of(browser.get(authorize_url(client, scope="openid", request="x.y.z"))["Location"])["error"] == (
        "request_not_supported"
    )
    response = browser.get(authorize_url(client, scope="openid", request_uri="https://x.example/r"))
    assert query_of(response["Location"])["error"] == "request_uri_not_supported"


def test_a_public_client_runs_the_openid_flow_with_pkce(browser, api, public, signing_keys):
    verifier, challenge = pkce_pair()
    response = consent(browser, authorize_url(public, scope="openid", nonce="pub", code_challenge=challenge))
    code = query_of(response["Location"])["code"]
    tokens = exchange(api, public, code, verifier=verifier).json()
    assert _verified(tokens["id_token"], api)[1]["aud"] == public.client_id


# --- the client's ID token algorithm ---------------------------------------------------------------


def test_the_algorithm_is_set_by_a_service_with_an_audit_row_and_refuses_hs256(app, owner):
    from django.core.exceptions import ValidationError

    from oauthclients.models import AuditAction, ClientAuditEvent
    from oauthclients.services import client_id_token_algorithm_set

    client, _secret = app
    assert client.id_token_signed_response_alg == "RS256"  # the OpenID Connect default
    client_id_token_algorithm_set(client=client, algorithm="ES256", actor=owner)
    client.refresh_from_db()
    assert client.id_token_signed_response_alg == "ES256" and client.status == ClientStatus.APPROVED
    event = ClientAuditEvent.objects.filter(client=client, action=AuditAction.CLIENT_UPDATED).get()
    assert event.detail["id_token_signed_response_alg"] == "ES256"
    with pytest.raises(ValidationError):
        client_id_token_algorithm_set(client=client, algorithm="HS256", actor=owner)


def test_the_command_sets_the_algorithm(app):
    from io import StringIO

    from django.core.management import call_command

    client, _secret = app
    out = StringIO()
    call_command("oauthclient", "set-id-token-alg", client.client_id, "ES256", stdout=out)
    assert json.loads(out.getvalue())["id_token_signed_response_alg"] == "ES256"


@pytest.mark.parametrize(
    ("asked", "status", "stored"), [(None, 201, "RS256"), ("ES256", 201, "ES256"), ("HS256", 400, None)]
)
def test_registration_takes_id_token_signed_response_alg(api, db, asked, status, stored):
    metadata = {"redirect_uris": ["https://agent.example.com/cb"], "token_endpoint_auth_method": "none"}
    if asked:
        metadata["id_token_signed_response_alg"] = asked
    response = api.post("/v2/auth/oauth2/register", data=json.dumps(metadata), content_type="application/json")
    assert response.status_code == status, response.content
    if stored:
        assert response.json()["id_token_signed_response_alg"] == stored
    else:
        assert response.json()["error"] == "invalid_client_metadata"


# --- elsewhere -----------------------------------------------------------------------------------


def test_connected_apps_says_the_app_signs_you_in(browser, api, app, signing_keys):
    client, secret = app
    _openid_tokens(browser, api, client, secret, scope="openid email PROFILE_READ")
    page = browser.get("/settings/apps/").content.decode()
    assert "Signs you in" in page and "See your email address" in page


def test_no_table_holds_the_id_token(browser, api, app, signing_keys):
    from io import StringIO

    from django.core.management import call_command

    client, secret = app
    id_token = _openid_tokens(browser, api, client, secret)["id_token"]
    dump = StringIO()
    call_command("dumpdata", stdout=dump)
    for part in id_token.split("."):
        assert part not in dump.getvalue()


def test_dots_client_key_is_never_used_the_validator_signs_with_the_key_store():
    """DOT reads the model's jwk_key only in finalize_id_token and _get_key_for_token: both are
    ours, and the model refuses rather than fall back to DOT's PEM setting or the client secret."""
    from oauth2_provider.oauth2_validators import OAuth2Validator

    from oauthclients.models import OAuthClient
    from oauthflows.token.oauth2 import Validator

    assert Validator.finalize_id_token is not OAuth2Validator.finalize_id_token
    assert Validator._get_key_for_token is not OAuth2Validator._get_key_for_token
    with pytest.raises(NotImplementedError):
        OAuthClient().jwk_key  # noqa: B018 - the property is the call
