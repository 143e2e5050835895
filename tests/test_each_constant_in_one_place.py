"""Each limit, list and path the house names is one constant (issue 32 §2), read by every door.

Each test asks two doors (the developer service and RFC 7591 registration, the check and the
published metadata, the setting and the models) the same question at the constant's edge, so a door
that kept its own copy answers differently the day the constant changes.
"""

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
from oauthclients.models import AUTHORIZABLE_STATUSES, ClientStatus, IdTokenAlgorithm, OAuthClient
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
