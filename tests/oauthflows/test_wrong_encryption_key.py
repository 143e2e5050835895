"""A wrong OAUTH_SIGNING_KEY_ENCRYPTION_KEY (signing.keys): `check --deploy --database
default` names it before the process serves (config.E005, from keys.signing_keys_problems), and a
process that runs anyway answers 503 with Retry-After wherever a signature is needed, never a 500,
leaving the code or refresh token unused."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from config.checks import signing_keys_ready
from oauthclients import services
from signing.keys import signing_key_create, signing_key_retire, signing_keys_problems
from signing.statuslist import allocator
from tests.oauthflows.helpers import exchange, get_code, refresh

WRONG = "another-key-of-at-least-thirty-two-characters-long"
JWT_SERVICE = "https://bookings.example.com/v2"


@pytest.fixture
def keys_by_algorithm(db):
    allocator.forget()
    return {algorithm: signing_key_create(algorithm=algorithm) for algorithm in ("RS256", "ES256")}


@pytest.fixture
def jwt_service_client(reviewer):
    return services.resource_server_create(
        owner=reviewer, name="Bookings", resource_uri=JWT_SERVICE, actor=reviewer, token_format="jwt"
    ).client


def assert_unavailable(response):
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5" and response["Cache-Control"] == "no-store"
    assert response["Content-Type"].startswith("application/json")
    return response.json()


def test_the_problems_name_the_setting_and_each_key_it_does_not_open(keys_by_algorithm, settings):
    assert signing_keys_problems() == []
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = WRONG
    problems = signing_keys_problems()
    assert len(problems) == 2 and all("OAUTH_SIGNING_KEY_ENCRYPTION_KEY" in problem for problem in problems)
    for key in keys_by_algorithm.values():
        assert sum(key.kid in problem for problem in problems) == 1
    assert WRONG not in " ".join(problems)
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = ""
    (unset,) = signing_keys_problems()  # one sentence, not one per key
    assert "OAUTH_SIGNING_KEY_ENCRYPTION_KEY must be set" in unset


def test_a_key_no_longer_published_is_not_asked(keys_by_algorithm, settings):
    from django.utils import timezone

    from signing.models import SigningKey

    signing_key_retire(kid=keys_by_algorithm["RS256"].kid)
    SigningKey.objects.filter(kid=keys_by_algorithm["RS256"].kid).update(retired_at=timezone.now().replace(year=2000))
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = WRONG
    (problem,) = signing_keys_problems()
    assert keys_by_algorithm["ES256"].kid in problem


def test_check_deploy_errors_on_a_wrong_encryption_key(keys_by_algorithm, settings):
    assert signing_keys_ready(databases=["default"]) == []
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = WRONG
    found = signing_keys_ready(databases=["default"])
    assert [problem.id for problem in found] == ["config.E005", "config.E005"]
    assert all("OAUTH_SIGNING_KEY_ENCRYPTION_KEY" in problem.msg for problem in found)
    assert signing_keys_ready() == []  # a database question: only with --database
    with pytest.raises(SystemCheckError, match=r"config\.E005.*OAUTH_SIGNING_KEY_ENCRYPTION_KEY"):
        call_command("check", "--deploy", "--database", "default", "--tag", "security", stdout=StringIO())


def test_an_openid_exchange_is_503_and_the_code_stays_unused(keys_by_algorithm, settings, browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client, scope="openid PROFILE_READ", nonce="n-1")
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = WRONG
    body = assert_unavailable(exchange(api, client, code, secret=secret))
    assert body["error"]["code"] == "service_unavailable"
    assert api.get("/.well-known/jwks.json").status_code == 200  # public parts only: still served
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = settings_key()
    answered = exchange(api, client, code, secret=secret)
    assert answered.status_code == 200 and "id_token" in answered.json()


def test_a_jwt_exchange_a_jwt_refresh_and_the_status_list_are_503(
    keys_by_algorithm, settings, browser, api, confidential, jwt_service_client
):
    client, secret = confidential
    code = get_code(browser, client, resource=JWT_SERVICE)
    first = exchange(api, client, code, secret=secret).json()
    status_list = "/v2/auth/oauth2/status-lists/0"
    assert api.get(status_list).status_code == 200
    later_code = get_code(browser, client, resource=JWT_SERVICE)
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = WRONG
    from signing import keys as key_store

    key_store._op_keys.clear()  # a process started with the wrong value has decrypted nothing
    key_store.signers_forget()
    from signing import statuslist

    statuslist._signed.clear()
    assert_unavailable(exchange(api, client, later_code, secret=secret))
    assert_unavailable(refresh(api, client, first["refresh_token"], secret=secret))
    listed = assert_unavailable(api.get(status_list))
    assert listed["error"] == "temporarily_unavailable"
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = settings_key()
    assert exchange(api, client, later_code, secret=secret).status_code == 200
    assert refresh(api, client, first["refresh_token"], secret=secret).status_code == 200


def settings_key() -> str:
    from config import settings_test

    return settings_test.OAUTH_SIGNING_KEY_ENCRYPTION_KEY
