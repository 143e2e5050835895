"""Strict OpenID Connect client libraries against a live server: openid-client and oauth4webapi
(Node, tests/clients/node/) and Authlib (Python).

Each one discovers the server (/.well-known/openid-configuration), sends the user to authorize with
PKCE (S256), a nonce and max_age, exchanges the code, validates the ID token itself (signature
against the JWKS, iss, aud, exp, iat, nonce, auth_time) and calls userinfo. The user's part (log in,
Allow) is the requests.Session of tests/clients/conftest.py posting the forms as a browser would.
A wrong expected nonce must make each library refuse the ID token.

The Node package is installed with `npm ci` from its committed lock into a cache directory
(OIDC_NODE_CACHE, else ~/.cache) by tests/clients/conftest.py; without npm the Node tests skip,
except under CI=true.
"""

import json
import os
import shutil
import subprocess

import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt
from authlib.oidc.core import CodeIDToken
from joserfc.errors import InvalidClaimError  # Authlib 1.9's JOSE layer (its own dependency)

from profiles.models import Profile
from tests.clients.test_client_libraries import TIMEOUT, allow
from tests.factories import make_client

SCOPE = "openid profile email PROFILE_READ"
REDIRECT_URI = "http://127.0.0.1:8765/callback"


@pytest.fixture
def profiled_person(end_user):
    end_user.email = "ada@example.com"
    end_user.save(update_fields=["email"])
    Profile.objects.create(user=end_user, name="Ada Lovelace", time_zone="Europe/Paris", locale="fr")
    return end_user


def _app(owner, *, kind: str, algorithm: str = "RS256"):
    created = make_client(owner, kind=kind, scopes=["PROFILE_READ"], redirect_uris=[REDIRECT_URI], approve=True)
    created.client.id_token_signed_response_alg = algorithm
    created.client.save(update_fields=["id_token_signed_response_alg"])
    return created.client, (created.secret.plaintext if kind == "confidential" else "")


def run_node_flow(
    node_package, live_issuer, user_agent, *, library, client, secret, algorithm="RS256", wrong_nonce=False
):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "LIBRARY": library,
        "ISSUER": live_issuer,
        "CLIENT_ID": client.client_id,
        "CLIENT_SECRET": secret,
        "REDIRECT_URI": REDIRECT_URI,
        "SCOPE": SCOPE,
        "ID_TOKEN_ALG": algorithm,
        "WRONG_NONCE": "1" if wrong_nonce else "0",
    }
    process = subprocess.Popen(
        [shutil.which("node"), "flow.mjs"],
        cwd=node_package,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = json.loads(process.stdout.readline() or "{}")
        assert "authorization_url" in first, (first, process.stderr.read() if process.poll() is not None else "")
        callback = allow(user_agent, live_issuer, first["authorization_url"])
        process.stdin.write(callback + "\n")
        process.stdin.flush()
        result = json.loads(process.stdout.readline() or "{}")
        process.wait(timeout=TIMEOUT)
        return result, first["authorization_url"]
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=TIMEOUT)
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()


@pytest.mark.parametrize(
    ("library", "kind", "algorithm"),
    [
        ("openid-client", "confidential", "RS256"),
        ("openid-client", "public", "ES256"),
        ("oauth4webapi", "confidential", "ES256"),
        ("oauth4webapi", "public", "RS256"),
    ],
)
def test_node_libraries_discover_sign_in_validate_the_id_token_and_read_userinfo(
    node_package, live_issuer, user_agent, owner, profiled_person, signing_keys, library, kind, algorithm
):
    client, secret = _app(owner, kind=kind, algorithm=algorithm)
    result, authorization_url = run_node_flow(
        node_package, live_issuer, user_agent, library=library, client=client, secret=secret, algorithm=algorithm
    )
    assert "error" not in result, result
    assert "nonce=" in authorization_url and "code_challenge_method=S256" in authorization_url
    claims = result["claims"]
    assert claims["iss"] == live_issuer and claims["aud"] == client.client_id
    assert claims["sub"] == str(profiled_person.pk) and claims["nonce"] == result["nonce"]
    assert {"auth_time", "at_hash", "sid"} <= set(claims)
    assert result["scope"] == SCOPE
    assert result["userinfo"] == {
        "sub": str(profiled_person.pk),
        "preferred_username": profiled_person.username,
        "name": "Ada Lovelace",
        "zoneinfo": "Europe/Paris",
        "locale": "fr",
        "email": "ada@example.com",
        "email_verified": False,
    }


@pytest.mark.parametrize("library", ["openid-client", "oauth4webapi"])
def test_node_libraries_refuse_an_id_token_for_another_nonce(
    node_package, live_issuer, user_agent, owner, profiled_person, signing_keys, library
):
    client, secret = _app(owner, kind="confidential")
    result, _url = run_node_flow(
        node_package, live_issuer, user_agent, library=library, client=client, secret=secret, wrong_nonce=True
    )
    assert "error" in result and 'ID Token "nonce"' in f"{result['message']} {result['cause']}", result


def _authlib_flow(live_issuer, user_agent, client, secret, *, expected_nonce=None):
    metadata = requests.get(live_issuer + "/.well-known/openid-configuration", timeout=TIMEOUT).json()
    session = OAuth2Session(
        client.client_id, secret, scope=SCOPE, redirect_uri=REDIRECT_URI, code_challenge_method="S256"
    )
    verifier, nonce = generate_token(48), generate_token(20)
    url, _state = session.create_authorization_url(
        metadata["authorization_endpoint"], code_verifier=verifier, nonce=nonce
    )
    callback = allow(user_agent, live_issuer, url)
    token = session.fetch_token(metadata["token_endpoint"], authorization_response=callback, code_verifier=verifier)
    keys = JsonWebKey.import_key_set(requests.get(metadata["jwks_uri"], timeout=TIMEOUT).json())
    claims = jwt.decode(
        token["id_token"],
        keys,
        claims_cls=CodeIDToken,
        claims_options={"iss": {"essential": True, "value": metadata["issuer"]}},
        claims_params={"nonce": expected_nonce or nonce, "client_id": client.client_id},
    )
    claims.validate()
    # at_hash: OpenID Connect Core §3.1.3.6, checked by Authlib against the access token.
    claims.params["access_token"] = token["access_token"]
    claims.validate_at_hash()
    userinfo = session.get(metadata["userinfo_endpoint"], timeout=TIMEOUT).json()
    session.close()
    return claims, userinfo


def test_authlib_discovers_signs_in_validates_the_id_token_and_reads_userinfo(
    live_issuer, user_agent, owner, profiled_person, signing_keys
):
    client, secret = _app(owner, kind="confidential")
    claims, userinfo = _authlib_flow(live_issuer, user_agent, client, secret)
    assert claims["sub"] == userinfo["sub"] == str(profiled_person.pk)
    assert userinfo["email"] == "ada@example.com" and userinfo["zoneinfo"] == "Europe/Paris"


def test_authlib_refuses_an_id_token_for_another_nonce(live_issuer, user_agent, owner, profiled_person, signing_keys):
    client, secret = _app(owner, kind="confidential")
    with pytest.raises(InvalidClaimError, match="nonce"):
        _authlib_flow(live_issuer, user_agent, client, secret, expected_nonce="not-the-one-sent")
