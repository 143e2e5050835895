# ruff: noqa: F811 - the fixture imported from tests/browser/upstream_provider.py is named as an argument
"""The example organization's provider (examples/idjag_provider, docs/agents.md "The organization's
provider") runs as documented: `node provider.mjs config.example.json`, its shipped configuration
and policy, the port moved to a free one. The agent signs in there and exchanges its ID token for an
ID-JAG naming the authorization server its policy names, with the policy's client_id and scopes;
without a policy the provider offers no token exchange. (The other tests run the same provider with
their own configurations: tests/clients/test_mcp_idjag_oidc_provider.py, tests/browser/test_upstream_provider.py.)"""

import json
import subprocess

import pytest
import requests

from tests.browser.upstream_provider import PACKAGE, TOKEN_EXCHANGE, Upstream, upstream_package  # noqa: F401
from tests.clients.test_mcp_idjag_oidc_provider import decoded
from tests.integration.server import free_port
from tests.oauthflows.helpers import pkce_pair

ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
TIMEOUT = 10


def shipped() -> tuple[dict, dict]:
    return (
        json.loads((PACKAGE / "config.example.json").read_text()),
        json.loads((PACKAGE / "policy.example.json").read_text()),
    )


@pytest.fixture
def provider(upstream_package):
    """The example with its shipped configuration, on a free port; its policy file as shipped."""
    config, _policy = shipped()
    port = free_port()
    config |= {
        "port": port,
        "issuer": f"http://localhost:{port}",
        "id_jag_policy": str(PACKAGE / "policy.example.json"),
    }
    yield from _running(upstream_package, config)


def _running(package, config: dict):
    """Started as the other tests start it (tests/browser/upstream_provider.py: a start that does not
    reach "listening" within its deadline is tried again, never waited on for ever)."""
    upstream = Upstream.from_config(package, config)
    try:
        yield config
    finally:
        upstream.close()


def _discovery(config: dict) -> dict:
    return requests.get(config["issuer"] + "/.well-known/openid-configuration", timeout=TIMEOUT).json()


def _id_token(config: dict, agent: dict, login: str) -> str:
    endpoints = _discovery(config)
    verifier, challenge = pkce_pair()
    query = {
        "client_id": agent["client_id"],
        "redirect_uri": agent["redirect_uris"][0],
        "response_type": "code",
        "scope": "openid email",
        "nonce": "n",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    with requests.Session() as person:
        page = person.get(endpoints["authorization_endpoint"], params=query, timeout=TIMEOUT)
        assert page.status_code == 200 and "/interaction/" in page.url, page.text[:300]
        answer = person.post(page.url + "/login", data={"login": login}, allow_redirects=False, timeout=TIMEOUT)
        while answer.is_redirect and not answer.headers["Location"].startswith(agent["redirect_uris"][0]):
            answer = person.get(answer.headers["Location"], allow_redirects=False, timeout=TIMEOUT)
    code = requests.utils.urlparse(answer.headers["Location"]).query.split("code=")[1].split("&")[0]
    tokens = requests.post(
        endpoints["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": agent["redirect_uris"][0],
            "code_verifier": verifier,
        },
        auth=(agent["client_id"], agent["client_secret"]),
        timeout=TIMEOUT,
    )
    assert tokens.status_code == 200, tokens.text
    return tokens.json()["id_token"]


def test_the_shipped_configuration_issues_an_id_jag_for_the_server_its_policy_names(provider):
    config, policy = provider, shipped()[1]
    assert TOKEN_EXCHANGE in _discovery(config)["grant_types_supported"]
    agent = next(client for client in config["clients"] if TOKEN_EXCHANGE in client.get("grant_types", []))
    (audience, allowed), login = next(iter(policy.items())), next(iter(config["accounts"]))
    exchanged = requests.post(
        _discovery(config)["token_endpoint"],
        data={
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": _id_token(config, agent, login),
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": audience,
            "resource": "http://127.0.0.1:8931/mcp",
            "scope": " ".join(allowed["scopes"]),
        },
        auth=(agent["client_id"], agent["client_secret"]),
        timeout=TIMEOUT,
    )
    assert exchanged.status_code == 200, exchanged.text
    answer = exchanged.json()
    assert answer["issued_token_type"] == ID_JAG and answer["token_type"] == "N_A"
    header, claims = decoded(answer["access_token"])
    assert header["typ"] == "oauth-id-jag+jwt" and header["alg"] == "RS256"
    assert claims["iss"] == config["issuer"] and claims["aud"] == audience and claims["sub"] == login
    assert claims["client_id"] == allowed["clients"][agent["client_id"]]
    assert claims["scope"] == " ".join(allowed["scopes"]) and claims["email"] == config["accounts"][login]["email"]


def test_without_a_policy_it_offers_no_token_exchange(upstream_package):
    config, _policy = shipped()
    port = free_port()
    config = {key: value for key, value in config.items() if key != "id_jag_policy"} | {
        "port": port,
        "issuer": f"http://localhost:{port}",
    }
    for running in _running(upstream_package, config):
        assert TOKEN_EXCHANGE not in _discovery(running)["grant_types_supported"]


def test_it_says_how_to_run_it_without_a_configuration(upstream_package):
    ran = subprocess.run(["node", "provider.mjs"], cwd=upstream_package, capture_output=True, text=True, timeout=30)
    assert ran.returncode == 2 and "usage: node provider.mjs CONFIG.json" in ran.stderr
