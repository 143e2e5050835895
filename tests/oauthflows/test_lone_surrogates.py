"""Lone UTF-16 surrogates (issue 28, low 5): JSON's "\\ud800" escape is no Unicode character.

They used to reach oauthlib's urlencode, PostgreSQL and the templates and end in a 500. One rule
where a body is read (plumbing.requestparams.unicode_scalars_only): the token, revocation and
introspection endpoints answer invalid_request, registration invalid_client_metadata, and a
metadata document is the authorize 400 page. Run on SQLite and PostgreSQL.
"""

import json

import pytest

from oauthclients.models import OAuthClient
from tests.oauthflows.helpers import INTROSPECT, REVOKE, TOKEN, basic, get_code
from tests.oauthflows.test_client_metadata_documents import agent_document, assert_refused_page, authorize, documents
from tests.oauthflows.test_registration import agent_metadata, assert_registration_error, register
from tests.oauthflows.test_token import assert_token_error

__all__ = ["documents"]  # the fixture, used below

LONE = "\ud800"


def post_json(api, path, body: dict, **headers):
    # json.dumps writes the surrogate as the escape "\ud800", as an attacker's client would.
    return api.post(path, data=json.dumps(body), content_type="application/json", **headers)


# --- registration: every field, on both databases (PostgreSQL used to fail on the stored ones) ---


@pytest.mark.parametrize(
    "field, value",
    [
        ("client_name", f"Agent {LONE}"),
        ("client_uri", f"https://agent.example/{LONE}"),
        ("tos_uri", f"https://agent.example/tos{LONE}"),
        ("policy_uri", f"https://agent.example/policy{LONE}"),
        ("contacts", [f"ops{LONE}@agent.example"]),
        ("software_id", f"agent-{LONE}"),
        ("software_version", f"1.{LONE}"),
        ("logo_uri", f"https://agent.example/logo{LONE}.png"),
        ("redirect_uris", [f"http://127.0.0.1:33418/cb{LONE}"]),
        ("scope", f"PROFILE_READ{LONE}"),
        (f"x-unknown-{LONE}", "an unknown member's name"),
        ("x-unknown", {"nested": [LONE]}),
    ],
)
def test_registration_refuses_a_lone_surrogate_in_any_field(api, db, field, value):
    response = register(api, agent_metadata(**{field: value}))
    assert "surrogate" in assert_registration_error(response, "invalid_client_metadata")
    assert not OAuthClient.objects.filter(registration_source=OAuthClient.RegistrationSource.DCR).exists()


def test_registration_still_takes_any_real_character(api, db):
    response = register(api, agent_metadata(client_name="Agent é 日本 😀"))  # 😀 is a surrogate pair in JSON
    assert response.status_code == 201, response.content
    assert response.json()["client_name"] == "Agent é 日本 😀"


# --- token endpoint: every parameter, JSON bodies ---------------------------------------------


TOKEN_FIELDS = ["code", "refresh_token", "redirect_uri", "resource", "scope", "code_verifier", "client_id"]


@pytest.mark.parametrize("field", [*TOKEN_FIELDS, "client_secret", "grant_type"])
@pytest.mark.parametrize("grant_type", ["authorization_code", "refresh_token"])
def test_the_token_endpoint_refuses_a_lone_surrogate_in_any_parameter(api, browser, confidential, field, grant_type):
    client, secret = confidential
    body = {
        "grant_type": grant_type,
        "client_id": client.client_id,
        "client_secret": secret,
        "redirect_uri": client.redirect_uri_list[0],
        "code_verifier": "v" * 43,
        "scope": "PROFILE_READ",
        "resource": "https://api.example.com",
    }
    body["code" if grant_type == "authorization_code" else "refresh_token"] = get_code(browser, client)
    body[field] = body.get(field, "x") + LONE
    response = post_json(api, TOKEN, body)
    assert_token_error(response, "invalid_request")
    assert "surrogate" in response.json()["error_description"]


def test_a_lone_surrogate_in_a_resource_array_is_refused(api, confidential):
    client, secret = confidential
    body = {"grant_type": "refresh_token", "refresh_token": "r" * 43, "resource": ["https://a.example", LONE]}
    response = post_json(api, TOKEN, body, HTTP_AUTHORIZATION=basic(client.client_id, secret))
    assert_token_error(response, "invalid_request")


def test_a_form_body_cannot_carry_a_surrogate_and_is_answered_normally(api, confidential):
    # %ED%A0%80 is the surrogate's would-be UTF-8: Django decodes it to replacement characters.
    client, secret = confidential
    body = f"grant_type=refresh_token&refresh_token=%ED%A0%80&client_id={client.client_id}&client_secret={secret}"
    response = api.post(TOKEN, data=body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and "surrogate" not in response.json()["error_description"]


# --- revocation and introspection ---------------------------------------------------------------


@pytest.mark.parametrize("path", [REVOKE, INTROSPECT], ids=["revoke", "introspect"])
@pytest.mark.parametrize("field", ["token", "token_type_hint", "client_id", "client_secret"])
def test_revocation_and_introspection_refuse_a_lone_surrogate(api, confidential, path, field):
    client, secret = confidential
    body = {"token": "t" * 43, "token_type_hint": "access_token", "client_id": client.client_id}
    body["client_secret"] = secret
    body[field] += LONE
    response = post_json(api, path, body)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_request"
    assert "surrogate" in response.json()["error_description"]


# --- a client ID metadata document at authorize --------------------------------------------------


@pytest.mark.parametrize("field", ["client_name", "client_uri", "logo_uri"])
def test_a_metadata_document_with_a_lone_surrogate_is_the_400_page(browser, documents, field):
    documents.serve(agent_document(documents.url, **{field: f"Inspector {LONE}"}))
    assert_refused_page(authorize(browser, documents.url), "surrogate")
    assert not OAuthClient.objects.filter(client_id=documents.url).exists()


# --- /v2/me (the resource API's JSON parser, scopes.parsers) --------------------------------------


def test_v2_me_refuses_a_lone_surrogate(api, end_user, confidential):
    from tests.oauthflows.helpers import ME
    from tests.scopes.tokens import access_token_create

    token = access_token_create(user=end_user, client=confidential[0], scope="PROFILE_WRITE", expires_in=600)
    for body in ({"timeZone": f"UTC{LONE}"}, {"name": LONE}, {f"x{LONE}": "y"}):
        response = api.patch(
            ME, data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert response.status_code == 400, response.content
        assert response.json()["status"] == "error"
