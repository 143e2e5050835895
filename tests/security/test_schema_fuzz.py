"""Schema-driven fuzzing (schemathesis) of the token, revocation, introspection and /v2/me endpoints.

Requests are generated from the OpenAPI document the server publishes (/v2/schema/), valid ones
(positive) and ones that break it (negative), and sent to the Django WSGI application in-process.
Every answer must be a non-5xx answer that the document describes: a documented status, media
type, headers and body. Some requests carry real credentials (a client's secret, in the body or as
HTTP Basic; a live code, refresh token or access token) so that the paths past authentication are
fuzzed too, successes included.

A short run in the normal suite; `make fuzz-schema` (SCHEMA_FUZZ_EXAMPLES, default 500 per
operation and mode) runs a longer one. The authorization endpoint is an HTML browser endpoint
and is fuzzed by tests/security/test_fuzz.py instead.
"""

import copy
import os
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.oauthflows.conftest import api, confidential  # noqa: F401
from tests.oauthflows.helpers import INTROSPECT, ME, REVOKE, TOKEN, basic, exchange, get_code
from tests.openapi.conformance import openapi

MAX_EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", "15"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
OPERATIONS = [("POST", TOKEN), ("POST", REVOKE), ("POST", INTROSPECT), ("GET", ME), ("PATCH", ME)]
APP = WSGIHandler()


@dataclass
class World:
    """The live things a fuzzed request may carry instead of generated values."""

    browser: object
    api: object
    client: object
    secret: str

    def tokens(self, scope: str = "PROFILE_READ PROFILE_WRITE") -> dict:
        code = get_code(self.browser, self.client, scope=scope)
        return exchange(self.api, self.client, code, secret=self.secret).json()

    def client_credentials(self, case, how: str) -> None:
        body = case.body
        if how == "basic":
            body.pop("client_id", None)
            body.pop("client_secret", None)
            case.headers = {**(case.headers or {}), "Authorization": basic(self.client.client_id, self.secret)}
        else:
            body["client_id"] = self.client.client_id
            body["client_secret"] = self.secret

    def apply(self, case, method: str, path: str, choice: str) -> None:
        """Swap generated values for live ones, as `choice` says ("generated" keeps them all;
        "surrogate" adds a lone UTF-16 surrogate to a generated JSON string)."""
        if path == ME and choice == "surrogate":
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {self.tokens()['access_token']}"}
            surrogate_add(case)
            return
        if path == ME:
            if choice != "generated":
                scope = "BOOKING_READ" if choice == "narrow" else "PROFILE_READ PROFILE_WRITE"
                case.headers = {**(case.headers or {}), "Authorization": f"Bearer {self.tokens(scope)['access_token']}"}
            return
        if choice == "generated" or not isinstance(case.body, dict):
            return
        if choice == "surrogate":
            surrogate_add(case)
            return
        self.client_credentials(case, "basic" if choice.endswith("basic") else "body")
        if not choice.startswith("live"):
            return
        if path == TOKEN and case.body.get("grant_type") == "authorization_code":
            case.body["code"] = get_code(self.browser, self.client)
            case.body["redirect_uri"] = self.client.redirect_uri_list[0]
            case.body.pop("code_verifier", None)
        elif path == TOKEN:
            case.body["refresh_token"] = self.tokens()["refresh_token"]
        else:
            hint = case.body.get("token_type_hint")
            case.body["token"] = self.tokens()[hint if hint in ("access_token", "refresh_token") else "access_token"]


def surrogate_add(case) -> None:
    """A lone UTF-16 surrogate (JSON's "\ud800" escape; issue 28) in one of a JSON body's string
    values, the live client's credentials kept: schemathesis's alphabet is what UTF-8 encodes, so
    it never makes one itself. Form bodies cannot carry one (Django decodes them with U+FFFD)."""
    if not isinstance(case.body, dict) or "json" not in (case.media_type or ""):
        return
    names = sorted(name for name, value in case.body.items() if isinstance(value, str)) or ["client_id"]
    name = names[len(repr(case.body)) % len(names)]
    case.body[name] = str(case.body.get(name, "")) + "\ud800"


CHOICES = {
    ME: ["generated", "live", "narrow", "surrogate"],
    TOKEN: ["generated", "client", "client-basic", "live", "live-basic", "surrogate"],
    REVOKE: ["generated", "client", "client-basic", "live", "live-basic", "surrogate"],
    INTROSPECT: ["generated", "client", "client-basic", "live", "live-basic", "surrogate"],
}


@pytest.fixture
def schema_world(browser, api, confidential):  # noqa: F811
    client, secret = confidential
    return World(browser, api, client, secret)


@pytest.fixture(scope="module")
def schema():
    # A copy: schemathesis hands out the document's own example dicts as bodies, which the
    # surrogate choice changes in place; the cached document (tests/openapi) must not see them.
    return schemathesis.openapi.from_dict(copy.deepcopy(openapi()))


@contextmanager
def in_test_transaction():
    """Run a request inside the test's transaction, as Django's test client does: the signals that
    would close the database connection around it are off meanwhile."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)


# GET /v2/me has no parameters and no body, and its OAuth 2.0 security is no header parameter that
# schemathesis could break: there is nothing to negate. Malformed Authorization headers on it are
# fuzzed by tests/security/test_fuzz.py (hypothesis) instead.
CASES = [
    (method, path, mode)
    for method, path in OPERATIONS
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if not (mode is GenerationMode.NEGATIVE and (method, path) == ("GET", ME))
]


@pytest.mark.parametrize(("method", "path", "mode"), CASES, ids=[f"{m} {p}-{mode.value}" for m, p, mode in CASES])
def test_fuzzed_requests_get_documented_answers_and_no_server_error(schema, schema_world, method, path, mode):
    operation = schema[path][method]
    statuses = []

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )
    @given(case=operation.as_strategy(generation_mode=mode), choice=st.sampled_from(CHOICES[path]))
    def fuzz(case, choice):
        schema_world.apply(case, method, path, choice)
        with in_test_transaction():
            response = case.call(app=APP)
        statuses.append(response.status_code)
        case.validate_response(response, checks=CHECKS)

    fuzz()
    assert statuses and max(statuses) < 500
