"""Token, revocation and introspection parameters named like oauthlib Request attributes.

oauthlib's Request answers attribute lookups from the request's parameters, so a parameter such as
`_grant`, `client` or `refresh_token_instance` would stand in for what the validator sets later.
Every such name is refused with invalid_request (never a 500), unless the endpoint takes it.
"""

from urllib.parse import urlencode

import pytest
from oauthlib.common import Request

from oauthclients.models import RefreshToken
from tests.oauthflows.helpers import INTROSPECT, REVOKE, TOKEN, assert_tokens, me, token_request
from tests.oauthflows.test_token import assert_token_error

_sample = Request("https://example.invalid/")
# Every attribute of an oauthlib Request, and those the validator and DOT set on it.
ATTRIBUTE_NAMES = sorted(
    {name for name in dir(_sample) if not name.startswith("__")}
    | set(_sample._params)
    | {
        "_grant",
        "_new_token_family",
        "refresh_token_instance",
        "pending_client_may_authenticate",
        "pending_owner_preview",
    }
)
TOKEN_PARAMS = {
    "grant_type",
    "code",
    "redirect_uri",
    "code_verifier",
    "refresh_token",
    "scope",
    "resource",  # RFC 8707: tests/oauthflows/test_audience.py
    "client_id",
    "client_secret",
}
TOKEN_OPERATION_PARAMS = {"token", "token_type_hint", "client_id", "client_secret"}


@pytest.mark.parametrize("name", sorted(set(ATTRIBUTE_NAMES) - TOKEN_PARAMS))
def test_a_token_request_with_a_request_attribute_as_parameter_is_invalid_request(api, confidential, tokens, name):
    client, secret = confidential
    data = {
        "grant_type": "refresh_token",
        "refresh_token": tokens["refresh_token"],
        "client_id": client.client_id,
        "client_secret": secret,
        name: "1",
    }
    body = assert_token_error(token_request(api, data), "invalid_request")
    assert name in body["error_description"]
    assert_token_error(token_request(api, data, as_json=True), "invalid_request")
    # In the query string too: oauthlib merges it into the same attributes.
    url = TOKEN + "?" + urlencode({name: "1"})
    response = api.post(
        url,
        data=urlencode({k: v for k, v in data.items() if k != name}),
        content_type="application/x-www-form-urlencoded",
    )
    assert_token_error(response, "invalid_request")
    # Nothing was consumed: the refresh token still works.
    assert RefreshToken.objects.filter(revoked__isnull=True).count() == 1


@pytest.mark.parametrize("path", [REVOKE, INTROSPECT])
@pytest.mark.parametrize("name", sorted(set(ATTRIBUTE_NAMES) - TOKEN_OPERATION_PARAMS))
def test_a_revocation_or_introspection_with_a_request_attribute_as_parameter_is_invalid_request(
    api, confidential, tokens, path, name
):
    client, secret = confidential
    data = {"token": tokens["access_token"], "client_id": client.client_id, "client_secret": secret, name: "1"}
    response = api.post(path, data=urlencode(data), content_type="application/x-www-form-urlencoded")
    assert_token_error(response, "invalid_request")
    assert me(api, tokens["access_token"]).status_code == 200


@pytest.mark.parametrize("name", ["_grant", "_anything", "client", "user", "refresh_token_instance"])
def test_the_same_request_without_the_parameter_succeeds(api, confidential, tokens, name):
    client, secret = confidential
    data = {
        "grant_type": "refresh_token",
        "refresh_token": tokens["refresh_token"],
        "client_id": client.client_id,
        "client_secret": secret,
    }
    assert_token_error(token_request(api, {**data, name: "x"}), "invalid_request")
    assert_tokens(token_request(api, data), "PROFILE_READ")
