"""A strict resource-server library against the JWT access tokens (RFC 9068) of a live server:
oauth4webapi's `validateJwtAccessToken` (tests/clients/node/jwt_access_token.mjs).

A resource server registered with `token_format = jwt` and a resource URI; an app gets a token for
it through a real authorize (the user's browser of tests/clients/conftest.py clicking Allow) and
code exchange with `resource`; the library discovers the server (RFC 8414
/.well-known/oauth-authorization-server, its `jwks_uri`), fetches the JWKS and checks typ at+jwt,
iss, aud, exp and the signature. Another expected audience, and a token whose claims were altered
after signing, must be refused by the library.
"""

import base64
import json
import os
import shutil
import subprocess

import pytest

from oauthclients import services
from signing.keys import signing_key_create
from tests.clients.test_client_libraries import TIMEOUT
from tests.factories import make_client
from tests.integration.flows import authorize, exchange

RESOURCE = "http://127.0.0.1:8002/v2"  # never called: the library only compares it with `aud`
REDIRECT_URI = "http://127.0.0.1:8765/callback"
SCOPE = "BOOKING_READ"


@pytest.fixture
def jwt_resource_server(reviewer):
    created = services.resource_server_create(
        owner=reviewer, name="Bookings API", resource_uri=RESOURCE, actor=reviewer, token_format="jwt"
    )
    return created.client


@pytest.fixture
def jwt_app(owner):
    created = make_client(owner, scopes=["PROFILE_READ", "BOOKING_READ"], redirect_uris=[REDIRECT_URI], approve=True)
    return created.client, created.secret.plaintext


def jwt_access_token(live_issuer, user_agent, jwt_app) -> str:
    client, secret = jwt_app
    code = authorize(user_agent, live_issuer, client, scope=SCOPE, resource=RESOURCE)
    response = exchange(live_issuer, client, secret, code)
    assert response.status_code == 200, response.text
    token = response.json()["access_token"]
    assert token.count(".") == 2, "an opaque token: the resource server is not JWT-format"
    return token


def validate(node_package, live_issuer, token, *, audience=RESOURCE, algorithm="ES256") -> dict:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ISSUER": live_issuer,
        "AUDIENCE": audience,
        "ACCESS_TOKEN": token,
        "ALG": algorithm,
    }
    finished = subprocess.run(
        [shutil.which("node"), "jwt_access_token.mjs"],
        cwd=node_package,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert finished.stdout.strip(), finished.stderr
    return json.loads(finished.stdout.splitlines()[-1])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _payload(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


@pytest.mark.parametrize("algorithm", ["ES256", "RS256"])
def test_oauth4webapi_validates_a_jwt_access_token(
    node_package, live_issuer, user_agent, jwt_resource_server, jwt_app, end_user, settings, algorithm
):
    settings.OAUTH_JWT_ACCESS_TOKEN_ALGORITHM = algorithm
    signing_key_create(algorithm=algorithm)
    token = jwt_access_token(live_issuer, user_agent, jwt_app)
    result = validate(node_package, live_issuer, token, algorithm=algorithm)
    assert "error" not in result, result
    assert result["jwks_uri"] == live_issuer + "/.well-known/jwks.json"
    claims = result["claims"]
    assert claims["iss"] == live_issuer and claims["aud"] == RESOURCE
    assert claims["sub"] == str(end_user.pk) and claims["client_id"] == jwt_app[0].client_id
    assert claims["scope"] == SCOPE and claims["exp"] > claims["iat"]
    assert claims["status"]["status_list"]["uri"].startswith(live_issuer + "/v2/auth/oauth2/status-lists/")


def test_oauth4webapi_refuses_a_jwt_access_token_for_another_audience(
    node_package, live_issuer, user_agent, jwt_resource_server, jwt_app
):
    signing_key_create(algorithm="ES256")
    token = jwt_access_token(live_issuer, user_agent, jwt_app)
    result = validate(node_package, live_issuer, token, audience="http://127.0.0.1:8003/v2")
    assert result.get("error") == "OAUTH_JWT_CLAIM_COMPARISON_FAILED", result
    assert '"aud"' in result["message"], result


def test_oauth4webapi_refuses_a_tampered_jwt_access_token(
    node_package, live_issuer, user_agent, jwt_resource_server, jwt_app
):
    signing_key_create(algorithm="ES256")
    token = jwt_access_token(live_issuer, user_agent, jwt_app)
    header, _payload_part, signature = token.split(".")
    claims = _payload(token) | {"scope": "BOOKING_READ BOOKING_WRITE"}
    tampered = ".".join((header, _b64(json.dumps(claims, separators=(",", ":")).encode()), signature))
    # Every claim still passes; only the signature no longer matches.
    result = validate(node_package, live_issuer, tampered)
    assert result.get("error") == "OAUTH_INVALID_RESPONSE", result
    assert result["message"] == "JWT signature verification failed", result
