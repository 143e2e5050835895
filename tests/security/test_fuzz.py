"""Property-based fuzzing of the token endpoint, the authorization endpoint, /v2/me, registration,
and every door that takes a passkey credential.

Arbitrary query strings, form, JSON and raw bodies, content types and Authorization headers
(random schemes, Basic payloads of random bytes, near-valid bearer tokens), mixed with valid
values so that the deeper checks are reached; JSON text includes lone UTF-16 surrogates.
Properties: never a 5xx; token errors are always
{"error", "error_description"} from RFC 6749 §5.2; /v2 errors always {"status": "error",
"error": {...}}; the authorization endpoint never redirects anywhere but the client's registered
redirect URI or the login page.

Short by default for CI; `make fuzz` (FUZZ_EXAMPLES=2000) runs it long.
"""

import base64
import itertools
import json
import os
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import pyotp
import pytest
from allauth.mfa.totp.internal.auth import TOTP
from django.core.cache import caches
from django.test import Client
from fido2 import cbor
from fido2.utils import websafe_encode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.selectors import ACR_ONE_FACTOR, ACR_TWO_FACTORS
from tests.accounts.helpers import issuer_origin, log_in, passkey_registration, second_step
from tests.accounts.test_second_factor_limits import Passkey, at_second_step, with_totp
from tests.factories import make_client, make_user
from tests.oauthflows.helpers import AUTHORIZE, ME, TOKEN, pkce_pair
from tests.oauthflows.test_registration import REGISTER
from tests.scopes.tokens import access_token_create
from tests.security.shapes import assert_api_error, assert_token_error
from tokens.consents import consent_record

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # no .hypothesis/ directory in the checkout
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

REDIRECT_URI = "https://fuzz.example.com/cb"
LOGIN_PATH = "/accounts/login/"
OAUTH_PARAMS = [
    "grant_type",
    "code",
    "redirect_uri",
    "client_id",
    "client_secret",
    "refresh_token",
    "code_verifier",
    "scope",
    "state",
    "response_type",
    "code_challenge",
    "code_challenge_method",
    "password",
    "token",
    "resource",
    "audience",
    "nonce",
    "prompt",
]
TOKEN_PARAMS = ["code", "client_id", "client_secret", "refresh_token", "code_verifier", "scope", "resource"]
FIXED_VALUES = [
    "authorization_code",
    "refresh_token",
    "client_credentials",
    "password",
    "code",
    "token",
    "S256",
    "plain",
    REDIRECT_URI,
    REDIRECT_URI + "/",
    "http://localhost:8765/cb",
    "https://evil.example/cb",
    "PROFILE_READ",
    "PROFILE_READ PROFILE_WRITE",
    "PROFILE_READ,BOOKING_READ",
    "ORG_PROFILE_READ",
    "NOPE",
    "",
    " ",
    "\x00",
    "A" * 43,
    "a" * 128,
    "a" * 129,
    "x" * 2049,
    "%00",
    "null",
    "[]",
    "{}",
    "é",
    "\u202e",
    "\U0001f600",
]
CONTENT_TYPES = [
    "application/x-www-form-urlencoded",
    "application/json",
    "application/json; charset=utf-8",
    "application/x-www-form-urlencoded; charset=latin-1",
    "text/plain",
    "multipart/form-data; boundary=x",
    "application/xml",
    "",
    "application/merge-patch+json",
    "*/*",
]

# Text without surrogates for query strings and form bodies (they cannot be %-encoded there).
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
# JSON can carry lone UTF-16 surrogates ("\ud800" escapes; issue 28): often, in JSON text.
surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3)
json_text = st.one_of(st.text(st.characters(), max_size=60), surrogates, st.tuples(text, surrogates, text).map("".join))
latin1_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=80)


def values(client_values):
    return st.one_of(text, st.sampled_from(FIXED_VALUES + client_values), st.integers().map(str))


def params(client_values):
    names = st.one_of(st.sampled_from(OAUTH_PARAMS), text)
    return st.lists(st.tuples(names, values(client_values)), max_size=8)


def percent_encoded_bytes():
    """A query string or form body of raw bytes, %-escaped: often not UTF-8 once decoded."""
    return st.binary(max_size=80).map(lambda raw: "x=" + quote(raw, safe=""))


def query_strings(client_values):
    return st.one_of(
        params(client_values).map(urlencode),
        percent_encoded_bytes(),
        latin1_text.map(lambda value: quote(value, safe="=&%+")),
    )


def bodies(client_values):
    json_values = st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | json_text
        | st.sampled_from(FIXED_VALUES),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(json_text, children, max_size=4),
        max_leaves=12,
    )
    json_objects = st.dictionaries(
        st.one_of(st.sampled_from(OAUTH_PARAMS), json_text),
        values(client_values) | json_text | json_values,
        max_size=8,
    )
    # Near-valid token requests in JSON, so that fuzzed text reaches oauthlib and the database.
    near_valid = st.fixed_dictionaries(
        {
            "grant_type": st.sampled_from(["authorization_code", "refresh_token"]),
            "redirect_uri": st.just(REDIRECT_URI) | json_text,
        },
        # Only the names the token endpoint takes: any other oauthlib name is refused before oauthlib.
        optional={name: values(client_values) | json_text for name in TOKEN_PARAMS},
    )
    return st.one_of(
        params(client_values).map(lambda pairs: urlencode(pairs).encode()),
        json_objects.map(lambda data: json.dumps(data).encode()),
        near_valid.map(lambda data: json.dumps(data).encode()),
        json_values.map(lambda data: json.dumps(data).encode()),
        st.binary(max_size=200),
        percent_encoded_bytes().map(str.encode),
    )


def authorization_headers(client_values, bearer_values=()):
    credentials = st.tuples(values(client_values), values(client_values)).map(
        lambda pair: quote(pair[0], safe="") + ":" + quote(pair[1], safe="")
    )
    basic_payloads = st.one_of(
        credentials.map(lambda raw: base64.b64encode(raw.encode()).decode()),
        st.binary(max_size=60).map(lambda raw: base64.b64encode(raw).decode()),
        latin1_text,
    )
    schemes = st.sampled_from(["Basic", "basic", "BASIC", "Bearer", "bearer", "Digest", "MAC", "", "Basic  "])
    return st.one_of(
        st.none(),
        basic_payloads.map(lambda payload: "Basic " + payload),
        st.sampled_from(list(bearer_values) or ["x"]).map(lambda token: "Bearer " + token),
        st.tuples(schemes, latin1_text).map(lambda pair: f"{pair[0]} {pair[1]}"),
        latin1_text,
    )


def headers_for(authorization):
    return {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}


@pytest.fixture
def world(owner, end_user, settings):
    """An approved confidential and public client, a live token, and a browser, without rate limits.

    The limiter would answer most fuzzed token requests with 429 after a few dozen failures;
    its own tests cover it, and here the requests must reach the endpoints.
    """
    settings.RATELIMIT_ENABLED = False
    confidential = make_client(
        owner, redirect_uris=[REDIRECT_URI], scopes=["PROFILE_READ", "PROFILE_WRITE"], approve=True
    )
    public = make_client(
        owner, name="Fuzz Mobile", kind="public", redirect_uris=["http://localhost:8765/cb"], approve=True
    ).client
    token = access_token_create(
        user=end_user, client=confidential.client, scope="PROFILE_READ PROFILE_WRITE", expires_in=1800
    )
    browser = Client(raise_request_exception=False)
    browser.force_login(end_user)
    verifier, challenge = pkce_pair()
    client_values = [
        confidential.client.client_id,
        confidential.secret.plaintext,
        public.client_id,
        verifier,
        challenge,
        token,
    ]
    return {
        "confidential": confidential.client,
        "public": public,
        "token": token,
        "browser": browser,
        "anonymous": Client(raise_request_exception=False),
        "values": client_values,
        "redirect_uris": {REDIRECT_URI, "http://localhost:8765/cb"},
    }


def fuzz_token(world, data):
    v = world["values"]
    query = data.draw(st.one_of(st.just(""), query_strings(v)), label="query")
    body = data.draw(bodies(v), label="body")
    content_type = data.draw(
        st.one_of(st.just("application/json"), st.sampled_from(CONTENT_TYPES), latin1_text), label="content_type"
    )
    authorization = data.draw(authorization_headers(v), label="authorization")
    path = TOKEN + ("?" + query if query else "")
    return world["anonymous"].generic("POST", path, body, content_type=content_type, **headers_for(authorization))


def test_the_token_endpoint_never_fails_and_always_answers_rfc6749_errors(world):
    @fuzz
    @given(data=st.data())
    def run(data):
        response = fuzz_token(world, data)
        assert response.status_code < 500, response.content[:300]
        # Random input never carries a live code or refresh token, so it is always an error.
        assert_token_error(response)

    run()


def assert_safe_authorization_answer(response, world, *, logged_in: bool):
    assert response.status_code < 500, response.content[:300]
    if response.status_code in (301, 302, 303, 307, 308):
        assert response.status_code in (302, 303)  # never 307 (SECURITY.md)
        location = response["Location"]
        parts = urlsplit(location)
        target = f"{parts.scheme}://{parts.netloc}{parts.path}" if parts.scheme else parts.path
        if logged_in:
            assert target in world["redirect_uris"], location
        else:
            assert parts.path == LOGIN_PATH and not parts.netloc, location
    else:
        assert response.status_code in (200, 400, 405, 413, 414), response.status_code
        assert response["Content-Type"].startswith("text/html")


def authorize_query(world, data):
    v = world["values"]
    base = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "client_id": st.sampled_from([world["confidential"].client_id, world["public"].client_id]) | text,
                "redirect_uri": st.sampled_from(sorted(world["redirect_uris"])) | values(v),
                "response_type": st.sampled_from(["code", "token", ""]) | text,
                "scope": values(v),
                "state": values(v),
                "code_challenge": values(v),
                "code_challenge_method": values(v),
            },
        ),
        label="base",
    )
    query = urlencode(base)
    extra = data.draw(st.one_of(st.just(""), query_strings(v)), label="extra")
    return query + ("&" + extra if extra and query else extra)


@pytest.mark.parametrize("who", ["browser", "anonymous"])
def test_the_authorization_endpoint_never_fails_and_never_redirects_off_the_registered_uri(world, who):
    @fuzz
    @given(data=st.data())
    def run(data):
        query = authorize_query(world, data)
        path = data.draw(st.sampled_from([AUTHORIZE, AUTHORIZE + "/allow", AUTHORIZE + "/deny"]), label="path")
        http = world[who]
        if path == AUTHORIZE:
            response = http.get(f"{path}?{query}")
        else:
            body = data.draw(bodies(world["values"]), label="body")
            response = http.generic(
                "POST", f"{path}?{query}", body, content_type=data.draw(st.sampled_from(CONTENT_TYPES))
            )
        assert_safe_authorization_answer(response, world, logged_in=who == "browser")

    run()


def test_v2_me_never_fails_and_always_answers_in_the_api_shape(world):
    @fuzz
    @given(data=st.data())
    def run(data):
        v = world["values"]
        method = data.draw(st.sampled_from(["GET", "PATCH", "HEAD", "POST", "PUT", "DELETE"]), label="method")
        query = data.draw(st.one_of(st.just(""), query_strings(v)), label="query")
        authorization = data.draw(
            st.one_of(st.just(f"Bearer {world['token']}"), authorization_headers(v, [world["token"]])),
            label="authorization",
        )
        body = data.draw(bodies(v), label="body") if method in ("PATCH", "POST", "PUT") else b""
        content_type = data.draw(st.sampled_from(CONTENT_TYPES), label="content_type")
        path = ME + ("?" + query if query else "")
        response = world["anonymous"].generic(
            method, path, body, content_type=content_type, **headers_for(authorization)
        )

        assert response.status_code < 500, response.content[:300]
        if method == "HEAD":
            return
        if response.status_code >= 400:
            assert_api_error(response)
        else:
            assert response.status_code == 200
            payload = response.json()
            assert payload["status"] == "success" and set(payload["data"]) == {
                "id",
                "username",
                "email",
                "name",
                "timeZone",
                "locale",
                "timeFormat",
                "weekStart",
            }

    run()


# The authorization request's login steering (OpenID Connect Core §3.1.2.1): acr_values (the
# second-factor step-up, oauthflows.pages.views), prompt and max_age, for users with and without a second
# factor, used in the session or not. One combination answered 500 (prompt=none with a step-up due).
ACR_VALUES = [ACR_ONE_FACTOR, ACR_TWO_FACTORS, f"{ACR_ONE_FACTOR} {ACR_TWO_FACTORS}", "urn:other:acr", "", " "]
PROMPT_WORDS = ["none", "login", "consent", "select_account", "create", "NONE", ""]
MAX_AGES = ["0", "1", "3600", "-1", "1.5", "1e3", "abc", "", "99999999999999999999999", " 60"]
STEP_UP_PATH = "/accounts/2fa/reauthenticate/"


@pytest.fixture
def sessions(world, owner):
    """Four browsers of four users: no second factor (password sign-in), a second factor set up
    after a password sign-in (not used in this session), a second factor used at sign-in, and a
    second factor with no sign-in recorded in the session (no auth_time, no amr)."""
    client = world["confidential"]
    browsers = {}
    plain = make_user("plain")
    browsers["no second factor"], _ = log_in("plain")
    unused = make_user("unused")
    browsers["second factor not used"], _ = log_in("unused")
    TOTP.activate(unused, pyotp.random_base32())
    used = make_user("used")
    secret = pyotp.random_base32()
    TOTP.activate(used, secret)
    browsers["second factor used"], _ = log_in("used")
    assert second_step(browsers["second factor used"], pyotp.TOTP(secret).now()).status_code == 302
    unrecorded = make_user("unrecorded")
    TOTP.activate(unrecorded, pyotp.random_base32())
    browsers["no sign-in recorded"] = Client(raise_request_exception=False)
    browsers["no sign-in recorded"].force_login(unrecorded)
    for user in (plain, used):  # a standing consent: prompt=none may issue a code at once
        consent_record(user=user, client=client, scopes=["PROFILE_READ"])
    for browser in browsers.values():
        browser.raise_request_exception = False
    return browsers


def steering_query(client, challenge: str, **steering) -> dict:
    query = {
        "client_id": client.client_id,
        "redirect_uri": REDIRECT_URI,
        "response_type": "code",
        "scope": "openid PROFILE_READ",
        "state": "fuzz",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    return query | {name: value for name, value in steering.items() if value is not None}


def assert_steered_safely(response, query: dict) -> None:
    """No 5xx; a redirect goes to the app's registered URI (a code or an OpenID error), or to the
    login page or the second-factor step, and never to those under prompt=none."""
    assert response.status_code < 500, (query, response.content[:300])
    if response.status_code not in (302, 303):
        assert response.status_code in (200, 400), (query, response.status_code)
        return
    location = response["Location"]
    parts = urlsplit(location)
    if parts.netloc:
        assert f"{parts.scheme}://{parts.netloc}{parts.path}" == REDIRECT_URI, (query, location)
        answer = dict(parse_qsl(parts.query))
        assert "code" in answer or answer.get("error") in STEERING_ERRORS, (query, location)
    else:
        assert parts.path in (LOGIN_PATH, STEP_UP_PATH), (query, location)
        assert "none" not in str(query.get("prompt", "")).split(), (query, location)


# Each combination, every time: the one that answered 500 is one of 4 x 6 x 4 x 4.
STEERING_ACR = [None, ACR_ONE_FACTOR, ACR_TWO_FACTORS, f"{ACR_ONE_FACTOR} {ACR_TWO_FACTORS}"]
STEERING_PROMPTS = [None, "none", "login", "consent", "none login", "bogus"]
STEERING_MAX_AGES = [None, "0", "3600", "abc"]
STEERING_ERRORS = {"interaction_required", "login_required", "consent_required", "invalid_request"}


def test_every_combination_of_acr_values_prompt_and_max_age_answers_without_5xx(world, sessions):
    client = world["confidential"]
    _verifier, challenge = pkce_pair()
    answers = {}
    for who, acr, prompt, max_age in itertools.product(
        sorted(sessions), STEERING_ACR, STEERING_PROMPTS, STEERING_MAX_AGES
    ):
        query = steering_query(client, challenge, acr_values=acr, prompt=prompt, max_age=max_age)
        response = sessions[who].get(f"{AUTHORIZE}?{urlencode(query)}")
        assert_steered_safely(response, query)
        answers[who, acr, prompt, max_age] = response
    # The step-up that prompt=none forbids: the app hears interaction_required.
    refused = answers["second factor not used", ACR_TWO_FACTORS, "none", None]
    assert dict(parse_qsl(urlsplit(refused["Location"]).query))["error"] == "interaction_required"
    asked = answers["second factor not used", ACR_TWO_FACTORS, None, None]
    assert urlsplit(asked["Location"]).path == STEP_UP_PATH


def test_acr_values_prompt_and_max_age_never_fail_with_or_without_a_second_factor(world, sessions):
    client = world["confidential"]
    _verifier, challenge = pkce_pair()

    @fuzz
    @given(data=st.data())
    def run(data):
        who = data.draw(st.sampled_from(sorted(sessions)), label="who")
        steering = data.draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "acr_values": st.sampled_from(ACR_VALUES) | text,
                    "prompt": st.lists(st.sampled_from(PROMPT_WORDS) | text, max_size=3).map(" ".join),
                    "max_age": st.sampled_from(MAX_AGES) | st.integers().map(str),
                },
            ),
            label="steering",
        )
        query = steering_query(client, challenge, **steering)
        query["scope"] = data.draw(st.sampled_from(["openid", "openid PROFILE_READ", "PROFILE_READ"]), label="scope")
        assert_steered_safely(sessions[who].get(f"{AUTHORIZE}?{urlencode(query)}"), query)

    run()


REGISTRATION_FIELDS = [
    "client_name",
    "client_uri",
    "policy_uri",
    "tos_uri",
    "logo_uri",
    "contacts",
    "software_id",
    "software_version",
    "scope",
    "redirect_uris",
    "grant_types",
    "response_types",
    "token_endpoint_auth_method",
    "id_token_signed_response_alg",
]


def test_registration_never_fails_and_answers_rfc7591(world):
    # Open registration (RFC 7591): a valid base with fuzzed members, or any body at all.
    @fuzz
    @given(data=st.data())
    def run(data):
        fuzzed = st.one_of(json_text, st.lists(json_text, max_size=3), st.integers(), st.none())
        members = data.draw(st.dictionaries(st.sampled_from(REGISTRATION_FIELDS) | json_text, fuzzed, max_size=4))
        base = {"redirect_uris": ["http://127.0.0.1:4000/cb"], "token_endpoint_auth_method": "none"}
        body = data.draw(st.one_of(st.just(json.dumps({**base, **members}).encode()), bodies(world["values"])))
        content_type = data.draw(st.sampled_from(["application/json", *CONTENT_TYPES]), label="content_type")
        response = world["anonymous"].generic("POST", REGISTER, body, content_type=content_type)
        assert response.status_code < 500, response.content[:300]
        assert response.status_code in (201, 400), response.content[:300]
        if response.status_code == 400:
            assert set(response.json()) == {"error", "error_description"}

    run()


# --- passkeys: every door that takes a credential (issue 38's follow-up: {"id": "x"} was a 500) -----

# A member of a credential: base64url of random bytes, of random CBOR, of a client data JSON (the
# right or another challenge, type and origin), or any JSON value at all.
b64 = st.binary(max_size=64).map(websafe_encode)
cbor_values = st.recursive(
    st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.binary(max_size=40) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.integers(-5, 5) | text, inner, max_size=4),
    max_leaves=10,
)
client_data = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["webauthn.get", "webauthn.create"]) | json_text,
        "challenge": b64 | json_text,
        "origin": st.sampled_from([issuer_origin(), "https://evil.example"]) | json_text,
        "crossOrigin": st.booleans() | json_text,
    },
)
member = st.one_of(
    b64,
    cbor_values.map(lambda value: websafe_encode(cbor.encode(value))),
    client_data.map(lambda value: websafe_encode(json.dumps(value).encode())),
    json_text,
    st.integers(),
    st.none(),
    st.booleans(),
    st.lists(json_text, max_size=2),
    st.dictionaries(json_text, json_text, max_size=2),
)
RESPONSE_MEMBERS = ["clientDataJSON", "authenticatorData", "signature", "userHandle", "attestationObject", "transports"]
CREDENTIAL_MEMBERS = ["id", "rawId", "type", "response", "clientExtensionResults", "authenticatorAttachment"]
shaped_credentials = st.fixed_dictionaries(
    {},
    optional={
        "id": member,
        "rawId": member,
        "type": st.just("public-key") | member,
        "response": st.fixed_dictionaries({}, optional=dict.fromkeys(RESPONSE_MEMBERS, member)) | member,
        "clientExtensionResults": st.just({}) | member,
        "authenticatorAttachment": member,
    },
)
DELETED = object()


def mutated(data, real: dict) -> dict:
    """`real` (a device's answer to this page's challenge) with one to three members replaced or gone."""
    credential = json.loads(json.dumps(real))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        path = data.draw(
            st.sampled_from(
                [(name,) for name in CREDENTIAL_MEMBERS] + [("response", name) for name in RESPONSE_MEMBERS]
            ),
            label="path",
        )
        value = data.draw(member | st.just(DELETED), label="value")
        holder = credential
        for name in path[:-1]:
            holder = holder.get(name) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            if value is DELETED:
                holder.pop(path[-1], None)
            else:
                holder[path[-1]] = value
    return credential


@pytest.fixture
def passkey_doors(db, settings):
    """A person with an authenticator app and a passkey; no limits, so that every credential
    reaches its check."""
    settings.RATELIMIT_ENABLED = False
    settings.ACCOUNT_RATE_LIMITS = settings.MFA_RATE_LIMITS = False  # allauth's ("webauthn_login": 10/m/ip)
    caches["default"].clear()
    user, _secret = with_totp("alice")
    return Passkey(user)


def signed_in_with(passkey) -> Client:
    """A browser just signed in with the passkey alone (two factors in one, and recent: adding a
    passkey asks for a recent sign-in)."""
    browser = Client(raise_request_exception=False)
    browser.get("/accounts/2fa/webauthn/login/", HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert browser.post("/accounts/2fa/webauthn/login/", {"credential": passkey.answer(browser)}).status_code == 302
    assert "_auth_user_id" in browser.session
    return browser


PASSKEY_DOORS = {
    # door: (the page that asks the challenge, where the credential goes, the answers allowed)
    "passkey login": ("/accounts/2fa/webauthn/login/", "/accounts/2fa/webauthn/login/", {302}),
    "second step": ("/accounts/2fa/authenticate/", "/accounts/2fa/authenticate/", {200, 302}),
    "re-authentication": ("/accounts/2fa/webauthn/reauthenticate/", "/accounts/2fa/webauthn/reauthenticate/", {302}),
    "add a passkey": ("/accounts/2fa/webauthn/add/", "/accounts/2fa/webauthn/add/", {200, 302}),
}


def test_no_credential_at_any_passkey_door_answers_5xx(passkey_doors):
    passkey = passkey_doors

    @fuzz
    @given(data=st.data())
    def run(data):
        door = data.draw(st.sampled_from(sorted(PASSKEY_DOORS)), label="door")
        ask, post, allowed = PASSKEY_DOORS[door]
        if door == "passkey login":
            browser = Client(raise_request_exception=False)
            browser.get(ask, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
        elif door == "second step":
            browser = at_second_step("alice")
            browser.raise_request_exception = False
            browser.get(ask)
        else:
            browser = signed_in_with(passkey)
            browser.get(ask)
        real = passkey_registration(browser) if door == "add a passkey" else json.loads(passkey.answer(browser))
        kind = data.draw(st.sampled_from(["a device's answer, mutated", "credential-shaped", "any JSON"]), label="kind")
        if kind == "credential-shaped":
            credential = data.draw(shaped_credentials, label="credential")
        elif kind == "any JSON":
            credential = data.draw(st.recursive(member, lambda inner: st.lists(inner, max_size=3)), label="credential")
        else:
            credential = mutated(data, real)
        response = browser.post(post, {"credential": json.dumps(credential), "name": "Fuzzed"})
        assert response.status_code < 500, (door, credential, response.content[:300])
        assert response.status_code in allowed, (door, response.status_code)

    run()
