"""POST /v2/auth/oauth2/token with grant_type=authorization_code (spec §4.2, RFC 6749 §4.1.3, §5)."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from oauthclients import services
from oauthclients.models import AccessToken, Grant, RefreshToken
from tests.factories import make_client
from tests.oauthflows.helpers import TOKEN, assert_tokens, basic, exchange, get_code, me, pkce_pair, token_request
from tests.security.shapes import TOKEN_ERRORS

ALLOWED_ERRORS = TOKEN_ERRORS  # RFC 6749 §5.2


def assert_token_error(response, error, status=400, allowed=ALLOWED_ERRORS):
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error", "error_description"}
    assert body["error"] == error and body["error"] in allowed
    description = body["error_description"]
    assert description and all(0x20 <= ord(ch) <= 0x7E and ch not in '"\\' for ch in description)
    assert response["Cache-Control"] == "no-store"
    return body


def test_form_body_with_client_secret_post(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    assert_tokens(exchange(api, client, code, secret=secret), "PROFILE_READ")


def test_a_code_exchanged_with_a_json_body_gets_tokens(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    assert_tokens(exchange(api, client, code, secret=secret, as_json=True), "PROFILE_READ")


def test_http_basic_with_form_encoded_credentials(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": client.redirect_uri_list[0]}
    assert_tokens(token_request(api, data, auth=basic(client.client_id, secret)), "PROFILE_READ")


def test_basic_and_body_secret_together_is_invalid_request(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    response = exchange(api, client, code, secret=secret, auth=basic(client.client_id, secret))
    assert_token_error(response, "invalid_request")
    assert AccessToken.objects.count() == 0


def test_wrong_secret_and_unknown_client_look_the_same(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    wrong = exchange(api, client, code, secret=secret + "x")
    unknown = token_request(
        api,
        {
            "grant_type": "authorization_code",
            "code": code,
            "client_id": "nope",
            "client_secret": secret,
            "redirect_uri": client.redirect_uri_list[0],
        },
    )
    assert_token_error(wrong, "invalid_client", 401)
    assert_token_error(unknown, "invalid_client", 401)
    assert wrong.content == unknown.content
    assert wrong.status_code == unknown.status_code


def test_invalid_client_with_basic_answers_www_authenticate_basic(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": client.redirect_uri_list[0]}
    response = token_request(api, data, auth=basic(client.client_id, "wrong"))
    assert_token_error(response, "invalid_client", 401)
    assert response["WWW-Authenticate"].startswith("Basic")


def test_invalid_client_without_basic_challenges_basic_never_bearer(browser, api, confidential):
    # RFC 6749 §5.2: the token endpoint takes no bearer token, so it never asks for one.
    client, secret = confidential
    response = exchange(api, client, get_code(browser, client), secret=secret + "x")
    assert_token_error(response, "invalid_client", 401)
    assert response["WWW-Authenticate"] == 'Basic realm="oauth"'


@pytest.mark.parametrize("scheme", ["basic", "BASIC", "bAsIc"])
def test_the_basic_scheme_name_is_case_insensitive(browser, api, confidential, scheme):
    # RFC 7617 §2, RFC 9110 §11.1.
    client, secret = confidential
    data = {
        "grant_type": "authorization_code",
        "code": get_code(browser, client),
        "redirect_uri": client.redirect_uri_list[0],
    }
    auth = basic(client.client_id, secret).replace("Basic", scheme, 1)
    assert_tokens(token_request(api, data, auth=auth), "PROFILE_READ")
    wrong = basic(client.client_id, "wrong").replace("Basic", scheme, 1)
    response = token_request(api, {**data, "code": get_code(browser, client)}, auth=wrong)
    assert_token_error(response, "invalid_client", 401)
    assert response["WWW-Authenticate"] == 'Basic realm="oauth"'


def test_a_body_client_id_that_differs_from_basic_is_invalid_request(browser, api, confidential, owner):
    client, secret = confidential
    other = make_client(owner, name="Other", approve=True).client
    data = {
        "grant_type": "authorization_code",
        "code": get_code(browser, client),
        "redirect_uri": client.redirect_uri_list[0],
        "client_id": other.client_id,
    }
    body = assert_token_error(token_request(api, data, auth=basic(client.client_id, secret)), "invalid_request")
    assert "client_id" in body["error_description"]
    # The same client_id in both places is fine.
    assert_tokens(
        token_request(api, {**data, "client_id": client.client_id}, auth=basic(client.client_id, secret)),
        "PROFILE_READ",
    )


def test_missing_secret_for_a_confidential_client_is_invalid_client(browser, api, confidential):
    client, _ = confidential
    assert_token_error(exchange(api, client, get_code(browser, client)), "invalid_client", 401)


def test_either_active_secret_works_and_a_revoked_one_fails_at_once(browser, api, confidential, owner):
    client, first = confidential
    second = services.client_secret_create(client=client, actor=owner)
    assert_tokens(exchange(api, client, get_code(browser, client), secret=first), "PROFILE_READ")
    assert_tokens(exchange(api, client, get_code(browser, client), secret=second.plaintext), "PROFILE_READ")
    old = client.secrets.get(hint=first[:7])
    services.client_secret_revoke(client=client, secret_id=old.pk, actor=owner)
    assert_token_error(exchange(api, client, get_code(browser, client), secret=first), "invalid_client", 401)
    assert_tokens(exchange(api, client, get_code(browser, client), secret=second.plaintext), "PROFILE_READ")


def test_a_successful_authentication_records_last_use(browser, api, confidential):
    client, secret = confidential
    assert client.secrets.get().last_used_at is None
    exchange(api, client, get_code(browser, client), secret=secret)
    assert client.secrets.get().last_used_at is not None


def test_the_code_is_single_use(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    assert_tokens(exchange(api, client, code, secret=secret), "PROFILE_READ")
    assert_token_error(exchange(api, client, code, secret=secret), "invalid_grant")


def test_replaying_a_code_revokes_the_tokens_it_produced(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    tokens = assert_tokens(exchange(api, client, code, secret=secret), "PROFILE_READ")
    other = assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
    assert me(api, tokens["access_token"]).status_code == 200
    assert_token_error(exchange(api, client, code, secret=secret), "invalid_grant")
    assert me(api, tokens["access_token"]).status_code == 401
    refreshed = token_request(
        api,
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": client.client_id,
            "client_secret": secret,
        },
    )
    assert_token_error(refreshed, "invalid_grant")
    # Another authorization (another install of the same app) is untouched.
    assert me(api, other["access_token"]).status_code == 200


def test_an_expired_code_is_invalid_grant(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    Grant.objects.update(expires=timezone.now() - timedelta(seconds=1))
    assert_token_error(exchange(api, client, code, secret=secret), "invalid_grant")


def test_the_code_is_bound_to_its_client(browser, api, confidential, owner):
    client, _ = confidential
    other = make_client(owner, name="Other", redirect_uris=client.redirect_uri_list, approve=True)
    code = get_code(browser, client)
    response = exchange(api, other.client, code, secret=other.secret.plaintext)
    assert_token_error(response, "invalid_grant")


def test_the_redirect_uri_must_equal_the_authorization_requests(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client, redirect_uri="http://localhost:8765/cb")
    # Another registered URI is still a mismatch.
    assert_token_error(
        exchange(api, client, code, secret=secret, redirect_uri=client.redirect_uri_list[0]), "invalid_grant"
    )
    assert_tokens(exchange(api, client, code, secret=secret, redirect_uri="http://localhost:8765/cb"), "PROFILE_READ")


def test_a_missing_redirect_uri_is_invalid_request(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    data = {"grant_type": "authorization_code", "code": code, "client_id": client.client_id, "client_secret": secret}
    assert_token_error(token_request(api, data), "invalid_request")


def test_the_owner_tests_their_own_pending_client_end_to_end(api, owner):
    created = make_client(owner)
    client, secret = created.client, created.secret.plaintext
    browser = Client()
    browser.force_login(owner)
    tokens = assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
    assert me(api, tokens["access_token"]).status_code == 200
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client.client_id}
    assert_tokens(token_request(api, {**data, "client_secret": secret}), "PROFILE_READ")
    client.refresh_from_db()
    assert client.status == "pending"


def test_a_public_pending_client_works_for_its_owner(api, owner):
    client = make_client(owner, kind="public", redirect_uris=["http://127.0.0.1:9000/cb"]).client
    browser = Client()
    browser.force_login(owner)
    verifier, challenge = pkce_pair()
    code = get_code(browser, client, code_challenge=challenge)
    assert_tokens(exchange(api, client, code, verifier=verifier), "PROFILE_READ")


def _sent_back_to_review(client, owner):
    return services.client_update(
        client=client,
        actor=owner,
        name=client.name + " 2",
        purpose=client.purpose,
        website_url=client.website_url,
        redirect_uris=client.redirect_uri_list,
        scopes=client.scope_list,
    )


def test_a_pending_client_cannot_exchange_another_users_code(browser, api, confidential, owner):
    client, secret = confidential
    code = get_code(browser, client)  # the end user's code, issued while approved
    client = _sent_back_to_review(client, owner)
    assert client.status == "pending"
    body = assert_token_error(exchange(api, client, code, secret=secret), "unauthorized_client")
    assert "awaiting review" in body["error_description"] and "owner" in body["error_description"]
    assert not AccessToken.objects.exists()


def test_a_pending_client_cannot_refresh_another_users_token(browser, api, confidential, owner):
    client, secret = confidential
    tokens = assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
    client = _sent_back_to_review(client, owner)
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client.client_id}
    body = assert_token_error(token_request(api, {**data, "client_secret": secret}), "unauthorized_client")
    assert "awaiting review" in body["error_description"]
    assert RefreshToken.objects.get().revoked is None  # refused, not rotated


def test_a_rejected_client_cannot_get_tokens(browser, api, confidential, reviewer):
    client, secret = confidential
    code = get_code(browser, client)
    services.client_reject(client=client, actor=reviewer, reason="Abuse")
    assert_token_error(exchange(api, client, code, secret=secret), "invalid_client", 401)


@pytest.mark.parametrize(
    "grant_type", ["password", "client_credentials", "implicit", "urn:ietf:params:oauth:grant-type:device_code"]
)
def test_other_grant_types_are_unsupported(api, confidential, grant_type):
    client, secret = confidential
    response = token_request(
        api,
        {
            "grant_type": grant_type,
            "client_id": client.client_id,
            "client_secret": secret,
            "username": "enduser",
            "password": "x",
        },
    )
    assert_token_error(response, "unsupported_grant_type")


def test_missing_grant_type_is_invalid_request(api, confidential):
    client, secret = confidential
    assert_token_error(token_request(api, {"client_id": client.client_id, "client_secret": secret}), "invalid_request")


def test_missing_code_is_invalid_request(api, confidential):
    client, secret = confidential
    data = {
        "grant_type": "authorization_code",
        "client_id": client.client_id,
        "client_secret": secret,
        "redirect_uri": client.redirect_uri_list[0],
    }
    assert_token_error(token_request(api, data), "invalid_request")


@pytest.mark.parametrize("content_type", ["text/plain", "multipart/form-data; boundary=x", "application/xml", ""])
def test_other_content_types_are_invalid_request(api, content_type):
    response = api.post(TOKEN, data="grant_type=authorization_code", content_type=content_type)
    assert_token_error(response, "invalid_request")


@pytest.mark.parametrize(
    "body", [b"[]", b'"x"', b"{", b"\xff\xfe", b'{"grant_type": ["authorization_code"]}', b"null", b"[" * 100000]
)
def test_json_that_is_not_an_object_of_strings_is_invalid_request(api, body):
    response = api.post(TOKEN, data=body, content_type="application/json")
    assert_token_error(response, "invalid_request")


def test_credentials_in_the_query_string_are_refused(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    response = api.post(
        f"{TOKEN}?client_secret={secret}",
        data=f"grant_type=authorization_code&code={code}",
        content_type="application/x-www-form-urlencoded",
    )
    assert_token_error(response, "invalid_request")


def test_duplicated_parameters_are_refused(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    body = (
        f"grant_type=authorization_code&code={code}&code={code}&client_id={client.client_id}"
        f"&client_secret={secret}&redirect_uri={client.redirect_uri_list[0]}"
    )
    response = api.post(TOKEN, data=body, content_type="application/x-www-form-urlencoded")
    assert_token_error(response, "invalid_request")


def test_get_is_not_allowed(api):
    assert api.get(TOKEN).status_code == 405


# --- PKCE at the token endpoint ---


def test_public_client_exchanges_with_its_verifier_and_no_secret(browser, api, public):
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge)
    assert_tokens(exchange(api, public, code, verifier=verifier), "PROFILE_READ")
    assert RefreshToken.objects.count() == 1


def test_a_wrong_verifier_is_invalid_grant(browser, api, public):
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge)
    other, _ = pkce_pair()
    assert_token_error(exchange(api, public, code, verifier=other), "invalid_grant")


def test_a_missing_verifier_when_a_challenge_was_sent_is_refused(browser, api, public, confidential):
    _, challenge = pkce_pair()
    assert_token_error(exchange(api, public, get_code(browser, public, code_challenge=challenge)), "invalid_request")
    client, secret = confidential
    code = get_code(browser, client, code_challenge=challenge)
    assert_token_error(exchange(api, client, code, secret=secret), "invalid_request")


def test_a_confidential_client_may_use_pkce(browser, api, confidential):
    client, secret = confidential
    verifier, challenge = pkce_pair()
    code = get_code(browser, client, code_challenge=challenge)
    assert_tokens(exchange(api, client, code, secret=secret, verifier=verifier), "PROFILE_READ")


def test_a_verifier_for_a_code_issued_without_challenge_is_refused(browser, api, confidential):
    client, secret = confidential
    verifier, _ = pkce_pair()
    code = get_code(browser, client)
    assert_token_error(exchange(api, client, code, secret=secret, verifier=verifier), "invalid_grant")


@pytest.mark.parametrize("verifier", ["short", "a" * 42, "a" * 129, "a" * 42 + "!", "é" * 50])
def test_a_malformed_verifier_is_invalid_request(browser, api, public, verifier):
    _, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge)
    assert_token_error(exchange(api, public, code, verifier=verifier), "invalid_request")


def test_a_public_client_sending_a_secret_is_invalid_client(browser, api, public):
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge)
    assert_token_error(exchange(api, public, code, verifier=verifier, secret="made-up"), "invalid_client", 401)


def test_tokens_are_stored_only_as_digests(browser, api, confidential):
    client, secret = confidential
    tokens = assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
    access = AccessToken.objects.get()
    refresh = RefreshToken.objects.get()
    assert access.token == "" and refresh.token == ""
    assert tokens["access_token"] not in access.token_checksum
    assert len(tokens["access_token"]) >= 43 and len(tokens["refresh_token"]) >= 43


def test_basic_credentials_are_form_url_decoded(browser, api, confidential):
    # RFC 6749 §2.3.1: each part is application/x-www-form-urlencoded before base64.
    import base64

    client, secret = confidential
    code = get_code(browser, client)
    encode_all = lambda text: "".join(f"%{byte:02X}" for byte in text.encode())  # noqa: E731
    raw = f"{encode_all(client.client_id)}:{encode_all(secret)}".encode()
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": client.redirect_uri_list[0]}
    response = token_request(api, data, auth="Basic " + base64.b64encode(raw).decode())
    assert_tokens(response, "PROFILE_READ")


@pytest.mark.parametrize("header", ["Basic", "Basic !!!notbase64", "Basic " + "bm9jb2xvbg==", "Basic " + "w7w6w7w="])
def test_malformed_basic_credentials_are_invalid_client(db, api, header):
    response = token_request(api, {"grant_type": "refresh_token", "refresh_token": "x"}, auth=header)
    assert_token_error(response, "invalid_client", 401)


def test_unknown_client_and_wrong_secret_do_the_same_work(browser, api, confidential):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client, secret = confidential
    shapes = []
    for client_id, client_secret in ((client.client_id, secret + "x"), ("no-such-client", secret)):
        data = {
            "grant_type": "refresh_token",
            "refresh_token": "x",
            "client_id": client_id,
            "client_secret": client_secret,
        }
        with CaptureQueriesContext(connection) as captured:
            response = token_request(api, data)
        assert response.status_code == 401
        shapes.append([q["sql"].split(" WHERE ")[0] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]])
    # The secret's lookup, then whether the client_id names a public client (which has no
    # per-client failure limit, plumbing.ratelimit): both asked alike for an unknown client.
    assert shapes[0] == shapes[1] and len(shapes[0]) == 2


def test_a_code_sent_again_at_once_revokes_its_tokens_despite_the_refresh_grace(browser, api, confidential, settings):
    # RFC 6749 §4.1.2, RFC 9700 §4.5: the replay grace is for refresh tokens only.
    settings.OAUTH_REPLAY_GRACE_SECONDS = 60
    client, secret = confidential
    code = get_code(browser, client)
    tokens = assert_tokens(exchange(api, client, code, secret=secret), "PROFILE_READ")
    assert me(api, tokens["access_token"]).status_code == 200
    assert_token_error(exchange(api, client, code, secret=secret), "invalid_grant")
    assert me(api, tokens["access_token"]).status_code == 401
    assert_token_error(
        token_request(
            api,
            {
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client.client_id,
                "client_secret": secret,
            },
        ),
        "invalid_grant",
    )


def test_a_public_client_may_identify_itself_with_basic_and_an_empty_password(browser, api, public):
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge)
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": public.redirect_uri_list[0],
        "code_verifier": verifier,
    }
    assert_tokens(token_request(api, data, auth=basic(public.client_id, "")), "PROFILE_READ")


def test_a_confidential_client_with_an_empty_basic_password_is_invalid_client(browser, api, confidential):
    client, _ = confidential
    data = {
        "grant_type": "authorization_code",
        "code": get_code(browser, client),
        "redirect_uri": client.redirect_uri_list[0],
    }
    assert_token_error(token_request(api, data, auth=basic(client.client_id, "")), "invalid_client", 401)


def test_a_json_body_is_parsed_once_per_request(browser, api, confidential, monkeypatch):
    from plumbing import requestparams

    client, secret = confidential
    code = get_code(browser, client)
    calls = []
    original = requestparams.json_body_pairs
    monkeypatch.setattr(requestparams, "json_body_pairs", lambda raw: calls.append(1) or original(raw))
    assert_tokens(exchange(api, client, code, secret=secret, as_json=True), "PROFILE_READ")
    assert len(calls) == 1  # the rate limiter, the endpoint's checks and oauthlib's backend share it


@pytest.mark.parametrize("path", [TOKEN, "/v2/auth/oauth2/revoke", "/v2/auth/oauth2/introspect"])
def test_options_answers_204_with_allow(db, api, path):
    # RFC 9110 §9.3.7: not 401 or 405. (A CORS preflight is tests/oauthflows/test_cors.py.)
    response = api.options(path)
    assert response.status_code == 204 and response["Allow"] == "POST, OPTIONS"
    assert not response.has_header("WWW-Authenticate")
    assert api.get(path).status_code == 405


@pytest.mark.parametrize(
    "extra",
    [{"device_code": "x"}, {"client": "x"}, {"_grant": "x"}, {}],
    ids=["device_code", "an-oauthlib-attribute-name", "underscore", "nothing-else"],
)
def test_an_unsupported_grant_type_is_reported_as_such_whatever_else_the_body_holds(api, confidential, extra):
    client, secret = confidential
    data = {"grant_type": "client_credentials", "client_id": client.client_id, "client_secret": secret, **extra}
    assert_token_error(token_request(api, data), "unsupported_grant_type")
