"""Oversized or malformed input gets a clear 4xx in the caller's error shape, never a 500, and
the oversized kind is refused before any work: no database query, so no lookup and no hashing.

Endpoints: the token endpoint (RFC 6749 §5.2 JSON), the authorization endpoint and its
allow/deny POSTs (an error page, or an error redirect once the redirect URI is verified), and
GET/PATCH /v2/me (the API's error JSON); a passkey credential that is not one, at every door that
takes one (the form error allauth gives a wrong passkey).
"""

import json

import pytest
from allauth.core import context as allauth_context
from allauth.mfa.models import Authenticator
from allauth.mfa.webauthn.internal.auth import begin_registration
from allauth.utils import get_form_class
from django.contrib.messages import get_messages
from django.contrib.sessions.backends.db import SessionStore
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.forms import SignupWebAuthnForm
from tests.accounts.test_second_factor_limits import Passkey, at_second_step, signed_in_with_the_code, with_totp
from tests.factories import make_client
from tests.oauthflows.helpers import AUTHORIZE, ME, TOKEN, authorize_url, basic, query_of
from tests.security.shapes import assert_api_error, assert_error_page, assert_token_error

KB100 = "a" * 100_000
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def http():
    """An app's HTTP client that reports a server error as a 500 instead of raising it."""
    return Client(raise_request_exception=False)


@pytest.fixture
def profile_writer(owner):
    """An approved app that may read and write the profile (its ClientCreated: client and secret)."""
    return make_client(owner, scopes=["PROFILE_READ", "PROFILE_WRITE"], approve=True)


@pytest.fixture
def browser(end_user):
    """tests/conftest.py's end-user browser, except that a view's exception comes back as the 500
    a user would see (raise_request_exception=False): these tests assert there is none."""
    browser = Client(raise_request_exception=False)
    browser.force_login(end_user)
    return browser


@pytest.fixture
def profile_token(issue_token):
    """An access token of the end user's that may read and write the profile."""
    return issue_token("PROFILE_READ PROFILE_WRITE")


def no_queries():
    return CaptureQueriesContext(connection)


def post_form(http, path, body: bytes | str, content_type=FORM, **headers):
    # generic() sends the bytes as they are (post() would re-encode them).
    data = body.encode() if isinstance(body, str) else body
    return http.generic("POST", path, data, content_type=content_type, **headers)


# --- the token endpoint ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, body",
    [
        (TOKEN, "grant_type=refresh_token&client_id=x&refresh_token=" + KB100),
        (TOKEN, "grant_type=refresh_token&client_id=x&client_secret=" + "s" * 70_000),
        (TOKEN + "?x=" + KB100, "grant_type=refresh_token"),
        (TOKEN + "?grant_type=refresh_token&" + "x=1&" * 3000, "grant_type=refresh_token"),
    ],
    ids=["100KB refresh_token", "70KB secret", "100KB query", "3000 query fields"],
)
def test_token_refuses_oversized_requests_before_any_work(http, db, path, body):
    with no_queries() as queries:
        response = post_form(http, path, body)

    assert_token_error(response, status=400, error="invalid_request")
    assert len(queries) == 0, [query["sql"][:80] for query in queries]


def test_token_refuses_a_100kb_json_body_before_any_work(http, db):
    with no_queries() as queries:
        response = post_form(
            http,
            TOKEN,
            f'{{"grant_type": "refresh_token", "refresh_token": "{KB100}"}}',
            content_type="application/json",
        )
    assert_token_error(response, status=400, error="invalid_request")
    assert len(queries) == 0


def test_token_refuses_a_100kb_basic_header_as_an_unknown_client(http, db):
    response = post_form(http, TOKEN, "grant_type=refresh_token&refresh_token=x", HTTP_AUTHORIZATION="Basic " + KB100)
    assert_token_error(response, status=401, error="invalid_client")
    response = post_form(
        http, TOKEN, "grant_type=refresh_token&refresh_token=x", HTTP_AUTHORIZATION=basic("x" * 50_000, "y" * 40_000)
    )
    assert_token_error(response, status=401, error="invalid_client")


@pytest.mark.parametrize(
    "body",
    [
        "grant_type=refresh_token&grant_type=refresh_token&refresh_token=x",
        "grant_type=refresh_token&refresh_token=x&refresh_token=y&client_id=c",
        "grant_type=authorization_code&code=a&code=b&redirect_uri=https://a.example/cb&client_id=c",
        "grant_type=refresh_token&refresh_token=x&client_id=a&client_id=b",
    ],
)
def test_token_refuses_duplicated_parameters(http, db, body):
    assert_token_error(post_form(http, TOKEN, body), status=400, error="invalid_request")


@pytest.mark.parametrize(
    "body, content_type",
    [
        (b"grant_type=refresh_token&refresh_token=%ff%fe&client_id=c", FORM),
        (b"grant_type=refresh_token&refresh_token=\xff\xfe&client_id=c", FORM),
        (b"grant_type=refresh_token&client_id=%c3%28", FORM),
        (b"grant_type=refresh_token", FORM + "; charset=latin-1"),
        (b"grant_type=refresh_token", FORM + "; charset=no-such-charset"),
        (b'{"grant_type": "refresh_token", "refresh_token": "\xff"}', "application/json"),
        (b"\xef\xbb\xbf\xff", "application/json"),
    ],
    ids=["%ff", "raw ff", "%c3%28", "latin-1", "unknown charset", "json ff", "json bom ff"],
)
def test_token_refuses_bodies_that_are_not_utf8(http, db, body, content_type):
    assert_token_error(post_form(http, TOKEN, body, content_type=content_type), status=400, error="invalid_request")


@pytest.mark.parametrize("query", ["a=%ff", "a=%c3%28", "client_id=%ed%a0%80"])
def test_token_refuses_a_query_string_that_is_not_utf8(http, db, query):
    response = post_form(http, f"{TOKEN}?{query}", "grant_type=refresh_token&refresh_token=x&client_id=c")
    assert_token_error(response, status=400, error="invalid_request")


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "multipart/form-data; boundary=x",
        "application/xml",
        "application/json-patch+json",
        "",
        "application/x-www-form-urlencoded-not",
        "text/html; charset=utf-8",
    ],
)
def test_token_refuses_other_content_types(http, db, content_type):
    response = post_form(http, TOKEN, "grant_type=refresh_token&refresh_token=x&client_id=c", content_type=content_type)
    assert_token_error(response, status=400, error="invalid_request")


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'["grant_type", "refresh_token"]',
        b'"grant_type=refresh_token"',
        b"1",
        b"null",
        b"true",
        b'{"grant_type": {"x": 1}}',
        b'{"grant_type": ["refresh_token"]}',
        b'{"grant_type": null}',
        b'{"grant_type": true}',
        b"[" * 50_000,
        b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
        b"",
        b"{",
    ],
    ids=lambda body: repr(body[:20]),
)
def test_token_refuses_json_that_is_not_an_object_of_strings(http, db, body):
    response = post_form(http, TOKEN, body, content_type="application/json")
    assert_token_error(response, status=400, error="invalid_request")


@pytest.mark.parametrize("name", ["client_secret", "code", "refresh_token", "code_verifier", "password"])
def test_token_refuses_credentials_in_the_query_string(http, profile_writer, name):
    client, secret = profile_writer.client, profile_writer.secret.plaintext
    body = f"grant_type=refresh_token&refresh_token=x&client_id={client.client_id}&client_secret={secret}"
    response = post_form(http, f"{TOKEN}?{name}=leaked", body)
    assert_token_error(response, status=400, error="invalid_request")


def test_token_answers_a_get_with_405_and_no_body_parsing(http, db):
    assert http.get(TOKEN + "?grant_type=refresh_token").status_code == 405


# --- the authorization endpoint ---------------------------------------------------------------


@pytest.mark.parametrize("logged", [True, False], ids=["logged-in", "anonymous"])
@pytest.mark.parametrize(
    "extra",
    ["&x=" + KB100, "&state=" + KB100, "&scope=" + "PROFILE_READ%20" * 2000, "&a=1" * 3000],
    ids=["100KB param", "100KB state", "30KB scope", "3000 params"],
)
def test_authorize_refuses_oversized_queries_before_any_work(browser, http, profile_writer, logged, extra):
    with no_queries() as queries:
        response = (browser if logged else http).get(authorize_url(profile_writer.client) + extra)

    assert_error_page(response, 414)
    assert len(queries) == 0
    assert "Location" not in response


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_the_consent_posts_refuse_a_100kb_body_before_any_work(browser, profile_writer, decision):
    url = authorize_url(profile_writer.client).replace(AUTHORIZE + "?", f"{AUTHORIZE}/{decision}?", 1)
    with no_queries() as queries:
        response = post_form(browser, url, "csrfmiddlewaretoken=" + KB100)
    assert_error_page(response, 413)
    assert len(queries) == 0


@pytest.mark.parametrize("param", ["state", "scope", "redirect_uri", "client_id", "code_challenge"])
@pytest.mark.parametrize("bad", ["%ff", "%c3%28", "%ed%a0%80"], ids=["ff", "c328", "surrogate"])
def test_authorize_refuses_a_query_that_is_not_utf8_without_redirecting(browser, profile_writer, param, bad):
    response = browser.get(authorize_url(profile_writer.client) + f"&{param}=x{bad}")
    assert_error_page(response, 400)


def test_the_allow_post_refuses_a_form_body_that_is_not_utf8(browser, profile_writer):
    url = authorize_url(profile_writer.client).replace(AUTHORIZE + "?", f"{AUTHORIZE}/allow?", 1)
    assert_error_page(post_form(browser, url, b"csrfmiddlewaretoken=%ff"), 400)
    assert_error_page(post_form(browser, url, b"x=1", content_type=FORM + "; charset=latin-1"), 400)


def test_authorize_refuses_a_duplicated_client_id_or_redirect_uri_with_a_page(browser, profile_writer):
    client = profile_writer.client
    for extra in (f"&client_id={client.client_id}", f"&redirect_uri={client.redirect_uri_list[0]}"):
        assert_error_page(browser.get(authorize_url(client) + extra), 400)


@pytest.mark.parametrize(
    "name, value",
    [
        ("scope", "PROFILE_READ"),
        ("state", "xyz"),
        ("response_type", "code"),
        ("code_challenge", "A" * 43),
        ("code_challenge_method", "S256"),
    ],
)
def test_authorize_reports_other_duplicates_to_the_verified_redirect_uri(browser, profile_writer, name, value):
    url = authorize_url(
        profile_writer.client, response_type="code", code_challenge="A" * 43, code_challenge_method="S256"
    )
    response = browser.get(f"{url}&{name}={value}")
    assert response.status_code == 302
    assert response["Location"].startswith(profile_writer.client.redirect_uri_list[0] + "?")
    assert query_of(response["Location"])["error"] == "invalid_request"


def test_authorize_never_sends_a_secret_from_its_query_back_to_the_app(browser, profile_writer):
    # RFC 6749 §3.1: unknown parameters are ignored — and never echoed into the redirect.
    client, secret = profile_writer.client, profile_writer.secret.plaintext
    url = authorize_url(client) + f"&client_secret={secret}&code=stolen&password=pw"
    assert browser.get(url).status_code == 200
    response = browser.post(url.replace(AUTHORIZE + "?", f"{AUTHORIZE}/allow?", 1))
    assert response.status_code == 302
    location = response["Location"]
    assert secret not in location and "stolen" not in location and "pw" not in query_of(location).values()


# --- /v2/me ---------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "patch"])
def test_me_refuses_an_oversized_query_before_looking_up_the_token(http, profile_token, method):
    with no_queries() as queries:
        response = getattr(http, method)(ME + "?x=" + KB100, HTTP_AUTHORIZATION=f"Bearer {profile_token}")
    assert_api_error(response, status=414, code="uri_too_long")
    assert len(queries) == 0


@pytest.mark.parametrize("method", ["get", "patch"])
def test_me_refuses_a_query_that_is_not_utf8(http, profile_token, method):
    response = getattr(http, method)(ME + "?x=%ff", HTTP_AUTHORIZATION=f"Bearer {profile_token}")
    assert_api_error(response, status=400, code="bad_request")


def test_me_refuses_a_100kb_token_without_a_query(http, db):
    with no_queries() as queries:
        response = http.get(ME, HTTP_AUTHORIZATION="Bearer " + KB100)
    assert_api_error(response, status=401, code="invalid_token")
    assert len(queries) == 0


@pytest.mark.parametrize(
    "body",
    [f'{{"name": "{KB100}"}}', f'{{"name": "Ada", "timeZone": "{KB100}"}}', f'{{"{KB100}": 1}}'],
    ids=["100KB name", "100KB timeZone", "100KB key"],
)
def test_me_refuses_100kb_fields(http, profile_token, body):
    response = http.patch(ME, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {profile_token}")
    assert_api_error(response, status=400, code="validation_error")


@pytest.mark.parametrize(
    "body, content_type, status, code",
    [
        (b'{"name": "\xff"}', "application/json", 400, "parse_error"),
        (b"[1, 2]", "application/json", 400, "validation_error"),
        (b'"Ada"', "application/json", 400, "validation_error"),
        (b"null", "application/json", 400, "validation_error"),
        (b"name=Ada", FORM, 415, "unsupported_media_type"),
        (b"name=Ada", "text/plain", 415, "unsupported_media_type"),
        (b"--x--", "multipart/form-data; boundary=x", 415, "unsupported_media_type"),
    ],
    ids=["json ff", "array", "string", "null", "form", "text", "multipart"],
)
def test_me_patch_refuses_malformed_bodies(http, profile_token, body, content_type, status, code):
    response = http.generic("PATCH", ME, body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {profile_token}")
    assert_api_error(response, status=status, code=code)


def test_me_patch_with_a_duplicated_json_key_is_read_as_json_is_read(http, profile_token):
    # RFC 8259 leaves duplicate names to the parser; Python's keeps the last. No 5xx either way.
    body = '{"name": "A", "name": "B"}'
    response = http.patch(ME, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {profile_token}")
    assert response.status_code == 200 and response.json()["data"]["name"] == "B"


def test_me_ignores_a_token_in_the_query_string(http, profile_token):
    assert_api_error(http.get(f"{ME}?access_token={profile_token}"), status=401, code="unauthorized")
    response = http.get(f"{ME}?access_token=nonsense", HTTP_AUTHORIZATION=f"Bearer {profile_token}")
    assert response.status_code == 200


# --- passkeys: a credential that is not one --------------------------------------------------------
# fido2 raised KeyError 'rawId' (and ValueError, binascii.Error for the registration) where allauth
# catches only some errors: a 500, without a sign-in at the passkey login (accounts.forms).

MALFORMED_CREDENTIALS = [
    {"id": "x"},
    {"id": "x", "rawId": "x"},
    {"id": "x", "rawId": "x", "type": "public-key", "response": {}},
    {"id": "x", "rawId": "x", "type": "public-key", "response": {"clientDataJSON": "x", "authenticatorData": "x"}},
    {
        "id": "AAAA",
        "rawId": "AAAA",
        "type": "public-key",
        "response": {"clientDataJSON": "e30", "attestationObject": "oA"},
    },
    {"id": "AAAA", "rawId": "AAAA", "type": "nope", "response": {"userHandle": 5}},
    {"response": []},
    [],
    "x",
    None,
]
MALFORMED_IDS = [
    "id only",
    "no type",
    "empty response",
    "bad base64",
    "bad cbor",
    "wrong types",
    "list",
    "[]",
    "str",
    "null",
]


@pytest.fixture
def passkey_holder(db, settings):
    """A person with an authenticator app and a passkey; no counts left by another test."""
    settings.RATELIMIT_ENABLED = False
    caches["default"].clear()
    user, secret = with_totp("alice")
    Passkey(user)
    return user, secret


def _no_error(browser) -> Client:
    browser.raise_request_exception = False
    return browser


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


@pytest.mark.parametrize("credential", MALFORMED_CREDENTIALS, ids=MALFORMED_IDS)
def test_a_malformed_passkey_at_the_passkey_login_is_refused_without_a_500(passkey_holder, credential):
    browser = Client(raise_request_exception=False)
    browser.get("/accounts/2fa/webauthn/login/", HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    response = browser.post("/accounts/2fa/webauthn/login/", {"credential": json.dumps(credential)})
    assert (response.status_code, response["Location"]) == (302, "/accounts/login/")
    assert "_auth_user_id" not in browser.session
    # allauth's words for a refused passkey; for an empty credential, the field's.
    assert _messages(response) == ["This field is required." if credential in ([], None) else "Incorrect code."]


@pytest.mark.parametrize("credential", MALFORMED_CREDENTIALS, ids=MALFORMED_IDS)
def test_a_malformed_passkey_at_the_second_step_is_the_page_again_with_an_error(passkey_holder, credential):
    browser = _no_error(at_second_step("alice"))
    browser.get("/accounts/2fa/authenticate/")
    response = browser.post("/accounts/2fa/authenticate/", {"credential": json.dumps(credential)})
    assert response.status_code == 200 and "_auth_user_id" not in browser.session
    assert 'id="passkey-errors"' in response.content.decode()


@pytest.mark.parametrize("credential", MALFORMED_CREDENTIALS, ids=MALFORMED_IDS)
def test_a_malformed_passkey_at_re_authentication_is_refused_without_a_500(passkey_holder, credential):
    _user, secret = passkey_holder
    browser = _no_error(signed_in_with_the_code("alice", secret))
    browser.get("/accounts/2fa/webauthn/reauthenticate/")
    response = browser.post("/accounts/2fa/webauthn/reauthenticate/", {"credential": json.dumps(credential)})
    # allauth's answer to a refused passkey there: the login page, with the error as a message.
    assert (response.status_code, response["Location"]) == (302, "/accounts/login/")
    assert _messages(response)


@pytest.mark.parametrize("credential", MALFORMED_CREDENTIALS, ids=MALFORMED_IDS)
def test_a_malformed_passkey_registration_is_the_form_again_with_an_error(passkey_holder, credential):
    user, secret = passkey_holder
    browser = _no_error(signed_in_with_the_code("alice", secret))
    assert browser.get("/accounts/2fa/webauthn/add/").status_code == 200
    response = browser.post("/accounts/2fa/webauthn/add/", {"credential": json.dumps(credential), "name": "Phone"})
    assert response.status_code == 200 and 'class="errorlist"' in response.content.decode()
    assert Authenticator.objects.filter(user=user, type=Authenticator.Type.WEBAUTHN).count() == 1


@pytest.mark.parametrize("credential", MALFORMED_CREDENTIALS, ids=MALFORMED_IDS)
def test_a_malformed_passkey_at_a_passkey_sign_up_is_a_form_error(passkey_holder, rf, settings, credential):
    # Its page is off here (MFA_PASSKEY_SIGNUP_ENABLED): the form our settings give it, directly.
    user, _secret = passkey_holder
    request = rf.post("/accounts/2fa/webauthn/signup/")
    request.session, request.user = SessionStore(), user
    form_class = get_form_class(settings.MFA_FORMS, "signup_webauthn", None)
    assert form_class is SignupWebAuthnForm
    with allauth_context.request_context(request):
        begin_registration(user, True)
        form = form_class(user=user, data={"credential": json.dumps(credential), "name": "Phone"})
        assert not form.is_valid() and form.errors
