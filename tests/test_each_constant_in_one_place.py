"""Each limit, list and path the house names is one constant (issue 32 §2), read by every door.

Each test asks two doors (the developer service and RFC 7591 registration, the check and the
published metadata, the setting and the models) the same question at the constant's edge, so a door
that kept its own copy answers differently the day the constant changes.
"""

import ast
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client, RequestFactory
from django.urls import resolve

from oauthclients import selectors
from oauthclients.algorithms import SIGNING_ALGORITHMS
from oauthclients.models import IdTokenAlgorithm, OAuthClient
from oauthclients.policy import AUTHORIZABLE_STATUSES, ClientStatus
from oauthclients.validators import (
    MAX_LINK_URL_LENGTH,
    MAX_REDIRECT_URIS,
    MAX_URI_LENGTH,
    resource_uri_problem,
    validate_optional_url,
    validate_redirect_uris,
)
from oauthflows.pages.authorization import PROMPT_VALUES
from plumbing import errors
from plumbing.logfilters import RedactCredentials
from plumbing.requestparams import CREDENTIAL_PARAMS
from signing.models import SigningKey, SigningKeyAlgorithm
from signing.statuslist import list_uri
from tests.factories import PASSWORD, make_client, make_user
from tests.oauthflows.helpers import authorize_url

ROOT = Path(__file__).resolve().parent.parent


def register(**metadata):
    body = {"redirect_uris": ["http://127.0.0.1:33418/cb"], "token_endpoint_auth_method": "none", **metadata}
    return Client().post("/v2/auth/oauth2/register", data=json.dumps(body), content_type="application/json")


def uris(count: int) -> list[str]:
    return [f"https://app.example.com/cb/{n}" for n in range(count)]


# --- MAX_REDIRECT_URIS and MAX_URI_LENGTH: the developer's registration and RFC 7591's ---


def test_both_registrations_take_max_redirect_uris_and_refuse_one_more(db):
    assert validate_redirect_uris(uris(MAX_REDIRECT_URIS)) == uris(MAX_REDIRECT_URIS)
    with pytest.raises(ValidationError):
        validate_redirect_uris(uris(MAX_REDIRECT_URIS + 1))
    assert register(redirect_uris=uris(MAX_REDIRECT_URIS)).status_code == 201
    refused = register(redirect_uris=uris(MAX_REDIRECT_URIS + 1))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri"


def test_every_uri_is_refused_one_character_past_max_uri_length(db):
    long_uri = "https://app.example.com/" + "a" * (MAX_URI_LENGTH - len("https://app.example.com/"))
    assert len(long_uri) == MAX_URI_LENGTH
    assert validate_redirect_uris([long_uri]) == [long_uri]
    assert resource_uri_problem(long_uri) is None
    with pytest.raises(ValidationError):
        validate_redirect_uris([long_uri + "a"])
    assert resource_uri_problem(long_uri + "a") is not None
    assert register(logo_uri=long_uri).status_code == 201
    assert register(logo_uri=long_uri + "a").status_code == 400
    assert OAuthClient._meta.get_field("resource_uri").max_length == MAX_URI_LENGTH


def test_links_shown_to_users_are_refused_one_character_past_their_column(db):
    fields = ("website_url", "privacy_policy_url", "terms_url")
    assert {OAuthClient._meta.get_field(name).max_length for name in fields} == {MAX_LINK_URL_LENGTH}
    link = "https://app.example.com/" + "p" * (MAX_LINK_URL_LENGTH - len("https://app.example.com/"))
    assert validate_optional_url(link, label="privacy policy") == link
    with pytest.raises(ValidationError):
        validate_optional_url(link + "p", label="privacy policy")
    owner = make_user()
    assert make_client(owner, website_url=link).client.website_url == link
    with pytest.raises(ValidationError) as caught:
        make_client(owner, website_url=link + "p")
    assert "website_url" in caught.value.message_dict


# --- PROMPT_VALUES: the authorization request's check and OpenID discovery ---


def test_the_prompt_values_published_are_the_ones_accepted(db):
    published = Client().get("/.well-known/openid-configuration").json()["prompt_values_supported"]
    assert published == list(PROMPT_VALUES)
    client = make_client(make_user(), approve=True).client
    browser = Client()
    assert browser.login(username=make_user("prompted").username, password=PASSWORD)
    for value in published:
        response = browser.get(authorize_url(client, prompt=value))
        assert "invalid_request" not in response.get("Location", ""), value
    refused = browser.get(authorize_url(client, prompt="popup"))
    assert refused.status_code == 302 and "error=invalid_request" in refused["Location"]


# --- SIGNING_ALGORITHMS: the setting, the start-up check, the commands, the models ---


def test_the_models_offer_exactly_the_signing_algorithms():
    assert sorted(IdTokenAlgorithm.values) == sorted(SigningKeyAlgorithm.values) == sorted(SIGNING_ALGORITHMS)
    assert IdTokenAlgorithm.values[0] == "RS256"  # OpenID Connect's default first


def test_the_setting_refuses_an_algorithm_outside_the_list():
    environment = {**os.environ, "DJANGO_DEBUG": "1", "OAUTH_JWT_ACCESS_TOKEN_ALGORITHM": "HS256"}
    environment.pop("DJANGO_SETTINGS_MODULE", None)
    run = subprocess.run(
        [sys.executable, "-c", "import config.settings"], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert run.returncode != 0
    assert "OAUTH_JWT_ACCESS_TOKEN_ALGORITHM must be one of ES256, RS256." in run.stderr


def test_the_command_and_the_check_name_every_algorithm(db, owner):
    client = make_client(owner, approve=True).client
    with pytest.raises(CommandError) as caught:
        call_command("oauthclient", "set-id-token-alg", client.client_id, "HS256")
    assert all(alg in str(caught.value) for alg in SIGNING_ALGORITHMS)
    from config.checks import signing_keys_ready

    SigningKey.objects.all().delete()
    (problem,) = [p for p in signing_keys_ready(None, databases=["default"]) if p.id == "config.E004"]
    assert all(f"--alg {alg}" in problem.hint for alg in SIGNING_ALGORITHMS)


# --- AUTHORIZABLE_STATUSES: the model, DOT's is_usable and the consent page ---


@pytest.mark.parametrize("status", ClientStatus.values)
def test_a_user_may_authorize_exactly_the_authorizable_statuses(db, status):
    client = make_client(make_user(), approve=True).client
    OAuthClient.objects.filter(pk=client.pk).update(status=status)
    client.refresh_from_db()
    authorizable = status in AUTHORIZABLE_STATUSES
    assert client.can_be_authorized is authorizable
    assert client.is_usable(RequestFactory().get("/")) is authorizable
    browser = Client()
    assert browser.login(username=make_user().username, password=PASSWORD)
    page = browser.get(authorize_url(client))
    assert (page.status_code == 200 and b">Allow</button>" in page.content) is authorizable, page.content[:300]


# --- the paths: settings.OAUTH_*_PATH and friends, served by the URLconf and read by the code ---


def test_every_path_setting_is_served(settings):
    import config.settings

    names = [name for name in vars(config.settings) if name.endswith("_PATH") and name.startswith(("OAUTH_", "API_"))]
    assert len(names) >= 12
    for name in names:
        path = getattr(settings, name)
        if name == "OAUTH_STATUS_LIST_PATH":
            path += "1"
        assert resolve(path).func, name
    assert resolve(settings.API_ME_PATH).url_name == "me"
    assert resolve(settings.OAUTH_STATUS_LIST_PATH + "7").url_name == "status_list"


def test_the_code_reads_the_paths_from_settings(settings, db):
    settings.OAUTH_TOKEN_PATH = "/elsewhere/token"
    settings.OAUTH_AUTHORIZE_PATH = "/elsewhere/authorize"
    settings.OAUTH_STATUS_LIST_PATH = "/elsewhere/lists/"
    assert list_uri(3) == settings.OAUTH_ISSUER + "/elsewhere/lists/3"
    endpoints = selectors.oauth_endpoints()
    assert endpoints.access_token_url == settings.OAUTH_ISSUER + "/elsewhere/token"
    assert endpoints.authorization_url == settings.OAUTH_ISSUER + "/elsewhere/authorize"
    settings.API_PATH_PREFIX = "/v3"
    settings.OAUTH_API_PATH_PREFIX = "/v3/oauth/"
    factory = RequestFactory()
    assert errors.is_api(factory.get("/v3/me")) and not errors.is_api(factory.get("/v2/me"))
    assert errors.is_oauth_endpoint(factory.post("/v3/oauth/token"))
    assert not errors.is_oauth_endpoint(factory.post("/v2/auth/oauth2/token"))


# --- CREDENTIAL_PARAMS: refused in URLs, kept out of error reports and out of the logs ---


@pytest.mark.parametrize("name", CREDENTIAL_PARAMS)
def test_each_credential_parameter_is_refused_in_a_url_hidden_from_reports_and_logs(db, name):
    from oauthflows.token.endpoints import TokenView

    form = "application/x-www-form-urlencoded"
    response = Client().post(f"/v2/auth/oauth2/token?{name}=s3cret", "grant_type=refresh_token", content_type=form)
    assert response.status_code == 400 and "never in the URL" in response.json()["error_description"]
    request = RequestFactory().post(
        "/v2/auth/oauth2/token", f"grant_type=refresh_token&{name}=s3cret", content_type=form
    )
    TokenView.as_view()(request)
    assert name in request.sensitive_post_parameters
    record = logging.LogRecord("oauthlib", logging.DEBUG, __file__, 1, "Saving %s", ({name: "s3cret"},), None)
    RedactCredentials().filter(record)
    assert "s3cret" not in record.getMessage()


# --- written once: each constant below is assigned in one module, and every door imports it ---

ONE_PLACE = {
    "MAX_TOKEN_LENGTH": "scopes/bearer.py",
    "LOOPBACK_HOSTS": "scopes/loopback.py",
    "PER_PROCESS_CACHES": "plumbing/sharedcache.py",
    "MAX_REDIRECT_URIS": "oauthclients/validators.py",
    "MAX_URI_LENGTH": "oauthclients/validators.py",
    "AUTHORIZABLE_STATUSES": "oauthclients/policy.py",
    "PROMPT_VALUES": "oauthflows/pages/authorization.py",
    "SIGNING_ALGORITHMS": "oauthclients/algorithms.py",
    "CREDENTIAL_PARAMS": "plumbing/requestparams.py",
}


def assignments(source: str) -> set[str]:
    """The names a module assigns at its top level (under an `if` or `try` too, not in a function)."""

    def assigned(body) -> set[str]:
        names = set()
        for node in body:
            if isinstance(node, ast.Assign | ast.AnnAssign):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names |= {name.id for name in ast.walk(target) if isinstance(name, ast.Name)}
            elif isinstance(node, ast.If | ast.Try):
                names |= assigned(node.body) | assigned(node.orelse)
                for handler in getattr(node, "handlers", []):
                    names |= assigned(handler.body)
        return names

    return assigned(ast.parse(source).body)


def _our_modules() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [name for name in listed.stdout.split() if not name.startswith("tests/") and (ROOT / name).is_file()]


def test_each_constant_is_assigned_in_one_module_only():
    where: dict[str, list[str]] = {name: [] for name in ONE_PLACE}
    for module in _our_modules():
        for name in assignments((ROOT / module).read_text(encoding="utf-8")) & set(ONE_PLACE):
            where[name].append(module)
    assert where == {name: [module] for name, module in ONE_PLACE.items()}


def test_the_guard_sees_a_second_copy():
    source = "MAX_TOKEN_LENGTH = 4096\ntry:\n    LOOPBACK_HOSTS = ()\nexcept E:\n    pass\ndef f():\n    y = 1\n"
    assert assignments(source) == {"MAX_TOKEN_LENGTH", "LOOPBACK_HOSTS"}


# --- MAX_TOKEN_LENGTH: the longest JWT issued is taken by introspection and revocation; longer is not issued ---

LONG_SERVICE = "https://bookings.example.com/" + "v" * (MAX_URI_LENGTH - len("https://bookings.example.com/"))


def _jwt_service(reviewer, uri):
    from oauthclients import services

    created = services.resource_server_create(
        owner=reviewer, name=f"Bookings {uri[-3:]}", resource_uri=uri, actor=reviewer, token_format="jwt"
    )
    return created.client, created.secret.plaintext


def _tokens_for(client, secret, *resources):
    from urllib.parse import urlencode

    from scopes.catalog import SCOPE_NAMES
    from tests.oauthflows.helpers import consent, exchange, query_of

    browser = Client()
    assert browser.login(username=make_user().username, password=PASSWORD)
    url = authorize_url(client, scope=" ".join(SCOPE_NAMES)) + "".join(
        f"&{urlencode({'resource': uri})}" for uri in resources
    )
    response = consent(browser, url)
    assert response.status_code == 302, response.content[:300]
    return exchange(Client(), client, query_of(response["Location"])["code"], secret=secret)


def test_the_longest_jwt_issued_is_taken_by_introspection_and_revocation(db, settings, reviewer, owner):
    """Every scope, a resource URI of the longest length registrable, RS256: past 4,096 characters,
    within MAX_TOKEN_LENGTH; introspection and revocation (tokens.selectors, the validator) take it."""
    from scopes.bearer import MAX_TOKEN_LENGTH
    from scopes.catalog import SCOPE_NAMES
    from signing.keys import signing_key_create
    from tests.oauthflows.helpers import INTROSPECT, REVOKE, client_post

    settings.OAUTH_JWT_ACCESS_TOKEN_ALGORITHM = "RS256"
    signing_key_create(algorithm="RS256")
    service, service_secret = _jwt_service(reviewer, LONG_SERVICE)
    created = make_client(owner, scopes=list(SCOPE_NAMES), approve=True)
    response = _tokens_for(created.client, created.secret.plaintext, LONG_SERVICE)
    assert response.status_code == 200, response.content
    token = response.json()["access_token"]
    assert token.count(".") == 2 and 4096 < len(token) <= MAX_TOKEN_LENGTH, len(token)
    api = Client()
    introspected = client_post(api, INTROSPECT, service, {"token": token}, secret=service_secret).json()
    assert introspected["active"] is True
    assert (
        client_post(api, REVOKE, created.client, {"token": token}, secret=created.secret.plaintext).status_code == 200
    )
    assert client_post(api, INTROSPECT, service, {"token": token}, secret=service_secret).json() == {"active": False}


def test_a_jwt_longer_than_max_token_length_is_not_issued(db, settings, reviewer, owner):
    """Three resources of the longest URIs (what the authorization request's query string can
    hold): the token no door would take is refused, not issued."""
    from oauthclients.models import AccessToken
    from scopes.catalog import SCOPE_NAMES
    from signing.keys import signing_key_create

    signing_key_create(algorithm="ES256")
    uris = [f"{LONG_SERVICE[:-1]}{n}" for n in range(3)]
    for uri in uris:
        _jwt_service(reviewer, uri)
    created = make_client(owner, scopes=list(SCOPE_NAMES), approve=True)
    response = _tokens_for(created.client, created.secret.plaintext, *uris)
    assert response.status_code == 400 and response.json()["error"] == "invalid_target"
    assert "ask for fewer resources" in response.json()["error_description"]
    assert not AccessToken.objects.exists()


# --- LOOPBACK_HOSTS: every door that allows plain http on this machine, by host name ---

LOOPBACK_CASES = {
    "http://localhost:8000/cb": True,
    "http://localhost/cb": True,
    "http://LOCALHOST:8000/cb": True,
    "http://127.0.0.1:8000/cb": True,
    "http://[::1]:8000/cb": True,
    "http://[::1]/cb": True,
    "http://[0:0:0:0:0:0:0:1]:8000/cb": False,  # the same address spelled otherwise: not the list's
    "http://127.0.0.2:8000/cb": False,
    "http://localhost.example.com:8000/cb": False,
    "http://example.com:8000/cb": False,
}


@pytest.mark.parametrize(("url", "loopback"), LOOPBACK_CASES.items())
def test_every_door_allows_plain_http_on_the_same_hosts(url, loopback, settings):
    from oauthflows.registration import cimd
    from scopes import jwt

    try:
        validate_redirect_uris([url])
        redirect_ok = True
    except ValidationError:
        redirect_ok = False
    assert redirect_ok is loopback
    assert (resource_uri_problem(url.removesuffix("/cb") + "/api") is None) is loopback
    assert cimd._loopback_url(url) is loopback
    assert jwt._fetchable(url) is loopback
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    assert cimd.is_metadata_document_url(url) is loopback


def test_a_loopback_url_with_user_information_is_no_metadata_document():
    from oauthflows.registration import cimd

    assert not cimd._loopback_url("http://user@localhost:8000/client.json")
    assert not cimd._loopback_url("http://localhost:8000")  # no document path


# --- PER_PROCESS_CACHES: the deploy check warns of them, /readyz has nothing to reach there ---


@pytest.mark.parametrize("backend", ["locmem.LocMemCache", "dummy.DummyCache", "redis.RedisCache"])
def test_the_deploy_check_and_readiness_agree_on_which_caches_are_per_process(settings, backend, monkeypatch):
    from config.checks import security_state_shared
    from operations.readiness import _caches
    from plumbing.sharedcache import PER_PROCESS_CACHES

    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    full = f"django.core.cache.backends.{backend}"
    settings.CACHES = {"default": {"BACKEND": full, "LOCATION": "redis://127.0.0.1:1/0"}}
    per_process = full in PER_PROCESS_CACHES
    assert per_process is (backend != "redis.RedisCache")
    warned = [problem.id for problem in security_state_shared(databases=[])]
    assert ("config.W005" in warned) is per_process
    # A per-process cache is not reached for; a shared one is (and here is unreachable).
    assert (_caches() is None) is per_process
