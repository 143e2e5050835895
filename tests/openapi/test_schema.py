"""The OpenAPI document at /v2/schema/ says what the endpoints really do.

Real responses, obtained through the HTTP flow (tests/oauthflows/helpers.py), are checked against
the documented status codes, media types, headers and body schemas; the request bodies that work
are checked against the documented request schemas; every documented operation exists.
"""

import re
from urllib.parse import urlencode

import pytest
from django.test import Client
from drf_spectacular.validation import validate_schema
from rest_framework.views import APIView

from scopes.checks import routes
from scopes.declarations import served_methods
from scopes.views import ScopedApiView
from tests.factories import make_client
from tests.oauthflows.helpers import (
    INTROSPECT,
    ME,
    REVOKE,
    TOKEN,
    basic,
    client_post,
    exchange,
    get_code,
    me,
    pkce_pair,
    token_request,
)
from tests.openapi.conformance import assert_conforms, assert_request_documented, openapi, operation

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
UNDOCUMENTED_VIEWS = {"/v2/schema/", "/v2/docs/"}  # the document and its viewer


def post(path, response):
    assert_conforms("post", path, response)
    return response


# --- the document itself ----------------------------------------------------------------------


def test_the_document_is_valid_openapi_3():
    document = openapi()
    validate_schema(document)
    assert document["openapi"].startswith("3.")
    assert set(document["components"]["securitySchemes"]) == {"oauth2", "clientBasic"}
    assert document["components"]["securitySchemes"]["clientBasic"]["scheme"] == "basic"
    assert document["components"]["securitySchemes"]["oauth2"]["type"] == "oauth2"


def test_the_documented_operations_are_exactly_the_api():
    assert {path: sorted(methods) for path, methods in openapi()["paths"].items()} == {
        TOKEN: ["post"],
        REVOKE: ["post"],
        INTROSPECT: ["post"],
        ME: ["get", "patch"],
        "/v2/scopes": ["get"],
    }


def _api_views(urlconf=None):
    """{OpenAPI path: view class} of every DRF view routed, parameters written {likeThis}."""
    return {path: view for path, _kwargs, view in routes(urlconf) if issubclass(view, APIView)}


def test_routes_with_parameters_are_documented_with_their_methods_and_scopes():
    # The test-only URLs declare scopes every way scopes allow, on routes with path parameters.
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator(urlconf="tests.scopes.urls_for_tests").get_schema(request=None, public=True)
    routed = {path: view for path, view in _api_views("tests.scopes.urls_for_tests").items() if path.startswith("/v2/")}
    assert set(routed) - UNDOCUMENTED_VIEWS - {"/v2/docs/oauth2-redirect.html"} == set(document["paths"])
    for path, view in routed.items():
        if path in document["paths"]:
            served = {m.lower() for m in served_methods(view)} - {"head"}
            assert set(document["paths"][path]) == served, path
    team = document["paths"]["/v2/teams/{teamId}/bookings"]
    assert team["get"]["security"] == [{"oauth2": ["TEAM_BOOKING_READ"]}]
    assert team["delete"]["security"] == [{"oauth2": ["TEAM_BOOKING_WRITE"]}]
    assert "`ORG_BOOKING_READ` also grants it" in team["get"]["description"]
    assert document["paths"]["/v2/organizations/{orgId}/bookings"]["get"]["security"] == [
        {"oauth2": ["ORG_BOOKING_READ"]}
    ]
    assert "security" not in document["paths"]["/v2/bookings/create"]["post"]  # public: no token needed
    assert "no access token needed" in document["paths"]["/v2/bookings/create"]["post"]["description"]
    assert document["paths"]["/v2/schedules"]["delete"]["security"] == [{"oauth2": []}]  # declared for no scope
    # No operation shows the base class's docstring.
    base_doc = ScopedApiView.__doc__.strip().splitlines()[0]
    assert not [
        (path, method)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if base_doc in operation.get("description", "")
    ]


def test_every_api_view_is_documented_and_every_documented_path_is_routed(db):
    documented = openapi()["paths"]
    routed = _api_views()
    assert set(routed) - UNDOCUMENTED_VIEWS == set(documented)
    for path, view in routed.items():
        if path in documented:
            assert set(documented[path]) == {m.lower() for m in served_methods(view)} - {"head"}, path
    for path, methods in documented.items():
        for method in methods:
            # No credentials: each operation exists and refuses (it is not a 404 or a 405).
            kwargs = {"data": "{}", "content_type": JSON} if method != "get" else {}
            response = getattr(Client(), method)(path, **kwargs)
            assert response.status_code not in (404, 405), (method, path, response.status_code)
            assert_conforms(method, path, response)


def test_the_schema_and_the_docs_are_public_and_served_without_a_cdn(db):
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer not-a-token"}):
        assert Client().get("/v2/schema/", **headers).status_code == 200
        docs = Client().get("/v2/docs/", **headers)
        assert docs.status_code == 200
    page = docs.content.decode()
    assert "//" not in re.sub(r"<!DOCTYPE html>|https?://(testserver|localhost|127\.0\.0\.1)", "", page)
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert len(assets) == 5  # favicon, stylesheet, two bundles, the init script
    for asset in assets:
        response = Client().get(asset)
        assert response.status_code == 200, asset
        assert b"".join(response) if hasattr(response, "streaming_content") else response.content
    csp = docs["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "script-src" not in csp and "unsafe-eval" not in csp


# --- the token endpoint ------------------------------------------------------------------------


def test_token_success_bodies_and_requests_match_the_document(browser, api, confidential, owner):
    client, secret = confidential
    redirect_uri = client.redirect_uri_list[0]
    for as_json in (False, True):
        code = get_code(browser, client, scope="PROFILE_READ BOOKING_READ")
        request = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": client.client_id,
            "client_secret": secret,
        }
        assert_request_documented("post", TOKEN, JSON if as_json else FORM, request)
        tokens = post(TOKEN, token_request(api, request, as_json=as_json)).json()
        assert (tokens["token_type"], tokens["expires_in"]) == ("bearer", 1800)

    request = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "scope": "PROFILE_READ"}
    assert_request_documented("post", TOKEN, FORM, request)
    post(TOKEN, token_request(api, request, auth=basic(client.client_id, secret)))

    public = make_client(
        owner, name="Mobile", kind="public", redirect_uris=["http://127.0.0.1:9000/cb"], approve=True
    ).client
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge, code_challenge_method="S256")
    request = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": "http://127.0.0.1:9000/cb",
        "client_id": public.client_id,
        "code_verifier": verifier,
    }
    assert_request_documented("post", TOKEN, FORM, request)
    post(TOKEN, token_request(api, request))


def test_a_legacy_clients_unrestricted_token_matches_the_document(browser, api, legacy):
    client, secret = legacy
    tokens = post(TOKEN, exchange(api, client, get_code(browser, client, scope=None), secret=secret)).json()
    assert tokens["scope"] == ""


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"grant_type": "password", "username": "u", "password": "p"},
        {"grant_type": "authorization_code", "code": "nope"},
        {"grant_type": "refresh_token", "refresh_token": "nope"},
        {
            "grant_type": "authorization_code",
            "code": "nope",
            "redirect_uri": "https://app.example.com/callback",
            "code_verifier": "short",
        },
    ],
)
def test_token_errors_match_the_document(api, confidential, data):
    client, secret = confidential
    response = post(TOKEN, token_request(api, {**data, "client_id": client.client_id, "client_secret": secret}))
    assert response.status_code == 400


def test_token_error_shapes_for_unreadable_bodies_match_the_document(api, settings):
    post(TOKEN, api.post(TOKEN, data="grant_type=x", content_type="text/plain"))
    post(TOKEN, api.post(TOKEN, data="[1]", content_type=JSON))
    post(TOKEN, api.post(TOKEN, data="a=1&a=2", content_type=FORM))
    post(TOKEN, api.post(TOKEN + "?client_secret=x", data="grant_type=refresh_token", content_type=FORM))
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    for body, content_type in (("grant_type=" + "x" * 5000, FORM), ('{"grant_type": "' + "x" * 5000 + '"}', JSON)):
        response = post(TOKEN, api.post(TOKEN, data=body, content_type=content_type))
        assert response.json()["error"] == "invalid_request"


@pytest.mark.parametrize("use_basic", [False, True])
def test_client_authentication_failures_match_the_document(browser, api, confidential, use_basic):
    client, secret = confidential
    data = {"grant_type": "refresh_token", "refresh_token": "nope"}
    if use_basic:
        response = post(TOKEN, token_request(api, data, auth=basic(client.client_id, secret + "x")))
        assert response["WWW-Authenticate"] == 'Basic realm="oauth"'
    else:
        response = post(TOKEN, token_request(api, {**data, "client_id": client.client_id, "client_secret": "x"}))
    assert response.status_code == 401


# --- revocation and introspection --------------------------------------------------------------


# The tokens carry both scopes: `token_scope` (tests/oauthflows/conftest.py) given its value here.
BOTH_SCOPES = pytest.mark.parametrize("token_scope", ["PROFILE_READ BOOKING_READ"])


@BOTH_SCOPES
def test_introspection_answers_match_the_document(api, confidential, tokens):
    client, secret = confidential
    for token, hint in ((tokens["access_token"], None), (tokens["refresh_token"], "refresh_token")):
        request = {"token": token, "client_id": client.client_id, "client_secret": secret}
        if hint:
            request["token_type_hint"] = hint
        assert_request_documented("post", INTROSPECT, FORM, request)
        body = post(INTROSPECT, client_post(api, INTROSPECT, client, {"token": token}, secret=secret)).json()
        assert body["active"] is True
    assert post(INTROSPECT, client_post(api, INTROSPECT, client, {"token": "nope"}, secret=secret)).json() == {
        "active": False
    }
    post(INTROSPECT, client_post(api, INTROSPECT, client, {}, secret=secret))
    post(INTROSPECT, client_post(api, INTROSPECT, client, {"token": "x", "token_type_hint": "id_token"}, secret=secret))
    post(INTROSPECT, client_post(api, INTROSPECT, client, {"token": "x"}, auth=basic(client.client_id, "wrong")))


@BOTH_SCOPES
def test_revocation_answers_match_the_document(api, confidential, tokens):
    client, secret = confidential
    assert_request_documented(
        "post", REVOKE, JSON, {"token": tokens["access_token"], "token_type_hint": "access_token"}
    )
    response = post(
        REVOKE, client_post(api, REVOKE, client, {"token": tokens["access_token"]}, secret=secret, as_json=True)
    )
    assert response.status_code == 200
    post(REVOKE, client_post(api, REVOKE, client, {}, secret=secret))
    post(REVOKE, client_post(api, REVOKE, client, {"token": "x", "token_type_hint": "code"}, secret=secret))
    post(REVOKE, client_post(api, REVOKE, client, {"token": "x"}, secret="wrong"))


# --- /v2/me ------------------------------------------------------------------------------------


def test_me_answers_match_the_document(browser, api, confidential, end_user, settings):
    client, secret = confidential
    full = exchange(api, client, get_code(browser, client, scope="PROFILE_READ PROFILE_WRITE"), secret=secret).json()
    narrow = exchange(api, client, get_code(browser, client, scope="BOOKING_READ"), secret=secret).json()
    token = full["access_token"]

    def check(method, response, status):
        assert response.status_code == status, response.content
        assert_conforms(method, ME, response)
        return response

    check("get", me(api, token), 200)
    end_user.email = ""
    end_user.save(update_fields=["email"])
    assert check("get", me(api, token), 200).json()["data"]["email"] == ""
    check("get", api.get(ME), 401)
    check("get", me(api, "not-a-token"), 401)
    check("get", me(api, narrow["access_token"]), 403)
    body = {"name": "Ada", "timeZone": "Europe/Berlin", "locale": "en-GB", "timeFormat": 12, "weekStart": "Sunday"}
    assert_request_documented("patch", ME, JSON, body)
    assert check("patch", me(api, token, "patch", data=body, content_type=JSON), 200).json()["data"]["name"] == "Ada"
    check("patch", me(api, token, "patch", data={"id": 5}, content_type=JSON), 400)
    check("patch", me(api, token, "patch", data={"timeZone": "Mars/Olympus"}, content_type=JSON), 400)
    check("patch", me(api, token, "patch", data="[1]", content_type=JSON), 400)
    check("patch", me(api, token, "patch", data="{", content_type=JSON), 400)
    check("patch", me(api, token, "patch", data=urlencode({"name": "x"}), content_type=FORM), 415)
    check("patch", me(api, narrow["access_token"], "patch", data={}, content_type=JSON), 403)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    check("patch", me(api, token, "patch", data={"name": "x" * 1_000}, content_type=JSON), 413)


def test_the_documented_token_lifetime_and_scopes_are_the_servers(settings):
    token = operation("post", TOKEN)
    assert token["security"] == [{"clientBasic": []}, {}]
    assert operation("get", ME)["security"] == [{"oauth2": ["PROFILE_READ"]}]
    schemas = openapi()["components"]["schemas"]
    assert schemas["TokenResponse"]["properties"]["expires_in"]["enum"] == [settings.OAUTH_ACCESS_TOKEN_LIFETIME]
