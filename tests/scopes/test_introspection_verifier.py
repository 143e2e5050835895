"""The remote verifier (scopes.introspection): the same scope rules and answers as in process, with
tokens checked over HTTP at a live authorization server (pytest-django's live_server), as a resource
server would.
"""

import hashlib
import http.server
import socket
import threading

import pytest
from django.core.cache import caches
from django.test import Client

from oauthclients import services
from tests.factories import make_resource_server
from tests.oauthflows.helpers import REVOKE, client_post
from tests.scopes.conftest import active_answer
from tests.scopes.responses import expected_challenge, resource_metadata
from tests.scopes.tokens import ALL_SCOPES

pytestmark = [pytest.mark.urls("tests.scopes.urls_for_tests"), pytest.mark.django_db(transaction=True)]


@pytest.fixture
def remote(settings, live_server, reviewer):
    """Switch this process's /v2 views to verifying by introspection at the live server."""
    created = make_resource_server(reviewer)
    settings.OAUTH_TOKEN_VERIFIER = "scopes.introspection.IntrospectionVerifier"
    settings.OAUTH_INTROSPECTION_URL = live_server.url + "/v2/auth/oauth2/introspect"
    settings.OAUTH_RESOURCE_SERVER_ID = created.client.client_id
    settings.OAUTH_RESOURCE_SERVER_SECRET = created.secret.plaintext
    settings.OAUTH_INTROSPECTION_CACHE_SECONDS = 0
    caches["default"].clear()
    yield created.client
    caches["default"].clear()


def call(path, token=None, method="get"):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return getattr(Client(), method)(path, **headers)


def test_a_granted_scope_passes_and_the_view_sees_the_tokens_user(remote, issue_token, end_user):
    response = call("/v2/bookings", issue_token("BOOKING_READ"))
    assert response.status_code == 200, response.content
    assert response.json()["data"]["user"] == str(end_user.pk)  # the `sub` claim


def test_a_missing_scope_is_403_with_the_challenge(remote, issue_token):
    response = call("/v2/bookings", issue_token("BOOKING_READ"), method="post")
    assert response.status_code == 403
    assert response["WWW-Authenticate"] == (
        'Bearer realm="api", error="insufficient_scope", scope="BOOKING_WRITE"'
        + "".join(f', resource_metadata="{value}"' for value in resource_metadata().values())
    )
    assert response.json()["error"]["code"] == "insufficient_scope"


def test_an_org_scope_grants_the_team_scope(remote, issue_token):
    assert call("/v2/teams/7/bookings", issue_token("ORG_BOOKING_READ")).status_code == 200
    assert call("/v2/teams/7/bookings", issue_token("BOOKING_READ")).status_code == 403


def test_a_legacy_token_is_unrestricted(remote, issue_token):
    token = issue_token("", legacy=True)
    assert call("/v2/organizations/3/memberships", token, method="delete").status_code == 200


def test_a_public_endpoint_needs_no_token(remote):
    assert call("/v2/bookings/create", method="post").status_code == 200


def test_no_token_and_a_bad_token_are_401(remote):
    assert call("/v2/bookings")["WWW-Authenticate"] == expected_challenge()
    response = call("/v2/bookings", "not-a-token")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == expected_challenge("invalid_token")


def test_a_refresh_token_is_refused_as_a_bearer(remote, browser, api, confidential):
    from tests.scopes.tokens import tokens_through_http

    client, secret = confidential
    tokens = tokens_through_http(browser, api, client, secret, "PROFILE_READ BOOKING_READ")
    assert call("/v2/bookings", tokens["access_token"]).status_code == 200
    assert call("/v2/bookings", tokens["refresh_token"]).status_code == 401


def test_a_revocation_takes_effect_at_once_without_a_cache(remote, browser, api, confidential):
    from tests.scopes.tokens import tokens_through_http

    client, secret = confidential
    tokens = tokens_through_http(browser, api, client, secret, "BOOKING_READ")
    assert call("/v2/bookings", tokens["access_token"]).status_code == 200
    assert client_post(api, REVOKE, client, {"token": tokens["access_token"]}, secret=secret).status_code == 200
    assert call("/v2/bookings", tokens["access_token"]).status_code == 401


def test_with_a_cache_a_revoked_token_passes_until_the_cache_time(remote, settings, browser, api, confidential):
    from tests.scopes.tokens import tokens_through_http

    settings.OAUTH_INTROSPECTION_CACHE_SECONDS = 60
    client, secret = confidential
    tokens = tokens_through_http(browser, api, client, secret, "BOOKING_READ")
    raw = tokens["access_token"]
    assert call("/v2/bookings", raw).status_code == 200
    key = "oauth-introspection:" + hashlib.sha256(raw.encode()).hexdigest()
    cached = caches["default"].get(key)
    assert cached and cached["scope"] == "BOOKING_READ" and raw not in repr(cached)
    client_post(api, REVOKE, client, {"token": raw}, secret=secret)
    assert call("/v2/bookings", raw).status_code == 200  # the cached answer, as documented
    caches["default"].delete(key)  # the cache time is over
    assert call("/v2/bookings", raw).status_code == 401


def test_inactive_answers_are_never_cached(remote, settings):
    settings.OAUTH_INTROSPECTION_CACHE_SECONDS = 60
    assert call("/v2/bookings", "not-a-token").status_code == 401
    assert caches["default"].get("oauth-introspection:" + hashlib.sha256(b"not-a-token").hexdigest()) is None


def test_the_cache_never_outlives_the_token(remote, settings, issue_token):
    settings.OAUTH_INTROSPECTION_CACHE_SECONDS = 3600
    raw = issue_token("BOOKING_READ", expires_in=5)
    assert call("/v2/bookings", raw).status_code == 200
    key = "oauth-introspection:" + hashlib.sha256(raw.encode()).hexdigest()
    expiry = caches["default"]._expire_info[caches["default"].make_and_validate_key(key)]
    import time

    assert expiry - time.time() <= 5


def test_a_rejected_clients_token_is_refused(remote, owner, reviewer, issue_token):
    token = issue_token("BOOKING_READ")
    assert call("/v2/bookings", token).status_code == 200
    from oauthclients.models import AccessToken

    services.client_reject(client=AccessToken.objects.get().application, actor=reviewer, reason="Abuse")
    assert call("/v2/bookings", token).status_code == 401


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def assert_unavailable(response):
    assert response.status_code == 503, response.content
    body = response.json()
    assert body["status"] == "error" and body["error"]["code"] == "service_unavailable"
    assert "authorization server" in body["error"]["message"]
    assert response["Retry-After"] == "5"


def test_an_unreachable_authorization_server_is_503(remote, settings, issue_token):
    settings.OAUTH_INTROSPECTION_URL = f"http://127.0.0.1:{_closed_port()}/v2/auth/oauth2/introspect"
    assert_unavailable(call("/v2/bookings", issue_token("BOOKING_READ")))


@pytest.fixture
def failing_server():
    """A local HTTP server that answers every POST with 500."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/introspect"
    server.shutdown()


def test_a_5xx_from_the_authorization_server_is_503(remote, settings, issue_token, failing_server):
    settings.OAUTH_INTROSPECTION_URL = failing_server
    assert_unavailable(call("/v2/bookings", issue_token("BOOKING_READ")))


def test_wrong_resource_server_credentials_are_503_not_401(remote, settings, issue_token, caplog):
    settings.OAUTH_RESOURCE_SERVER_SECRET = "cs_wrong"
    assert_unavailable(call("/v2/bookings", issue_token("BOOKING_READ")))
    assert "answered 401" in caplog.text and "cs_wrong" not in caplog.text


def test_a_public_endpoint_without_a_token_works_while_the_server_is_down(remote, settings):
    settings.OAUTH_INTROSPECTION_URL = f"http://127.0.0.1:{_closed_port()}/introspect"
    assert call("/v2/bookings/create", method="post").status_code == 200


def test_the_scope_rules_match_the_local_verifier(remote, settings, issue_token):
    cases = [
        ("/v2/bookings", "get", "BOOKING_READ"),
        ("/v2/bookings", "post", "BOOKING_READ"),
        ("/v2/teams/1/bookings", "get", "ORG_BOOKING_READ"),
        ("/v2/organizations/1/bookings", "get", "TEAM_BOOKING_READ"),
        ("/v2/schedules", "delete", ALL_SCOPES),
        ("/v2/undeclared", "get", ALL_SCOPES),
        ("/v2/organizations/1/workflows", "get", ALL_SCOPES),
    ]
    tokens = {scope: issue_token(scope) for _path, _method, scope in cases}

    def answers():
        found = []
        for path, method, scope in cases:
            response = call(path, tokens[scope], method)
            body = response.json()
            if "data" in body:  # the user is the user model's pk here, the `sub` string remotely
                body["data"]["user"] = str(body["data"]["user"])
            found.append((response.status_code, body, response.get("WWW-Authenticate")))
        return found

    remote_answers = answers()
    settings.OAUTH_TOKEN_VERIFIER = "tokens.verifier.LocalTokenVerifier"
    local_answers = answers()
    assert remote_answers == local_answers
    assert [status for status, _body, _challenge in local_answers] == [200, 403, 200, 403, 403, 403, 403]


# --- red-team finding 3: a service misconfigured with an app's credentials ---


@pytest.fixture
def with_an_apps_credentials(remote, settings, confidential):
    """The easy mistake: the service is given an app's client_id and secret, not a resource server's."""
    client, secret = confidential
    settings.OAUTH_RESOURCE_SERVER_ID = client.client_id
    settings.OAUTH_RESOURCE_SERVER_SECRET = secret
    return client, secret


def test_with_an_apps_credentials_its_refresh_token_is_not_a_bearer_token(
    with_an_apps_credentials, browser, api, caplog
):
    from tests.scopes.tokens import tokens_through_http

    client, secret = with_an_apps_credentials
    tokens = tokens_through_http(browser, api, client, secret, "PROFILE_READ BOOKING_READ")
    # The app's own introspection does describe its refresh token as active…
    described = client_post(
        api, "/v2/auth/oauth2/introspect", client, {"token": tokens["refresh_token"]}, secret=secret
    )
    assert described.json()["active"] is True
    # …but the verifier takes only a Bearer token_type.
    response = call("/v2/bookings", tokens["refresh_token"])
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == expected_challenge("invalid_token")
    assert "OAUTH_RESOURCE_SERVER_ID is an app's client_id" in caplog.text
    assert tokens["refresh_token"] not in caplog.text and secret not in caplog.text


@pytest.mark.parametrize("token_type", ["Bearer", "bearer", "BEARER"])
def test_a_bearer_token_type_in_any_case_passes(remote, settings, answering_server, token_type):
    settings.OAUTH_INTROSPECTION_URL, answer = answering_server
    answer["body"] = active_answer(token_type=token_type)
    assert call("/v2/bookings", "opaque").status_code == 200


@pytest.mark.parametrize("token_type", [None, "refresh_token", "Refresh", "", "mac", "N_A"])
def test_any_other_or_no_token_type_is_refused(remote, settings, answering_server, token_type):
    settings.OAUTH_INTROSPECTION_URL, answer = answering_server
    answer["body"] = active_answer(token_type=token_type)
    response = call("/v2/bookings", "opaque")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == expected_challenge("invalid_token")


# --- first-hour finding 9: a wrong secret is named as such, and caught by check --deploy ---


def test_a_refused_secret_is_logged_with_the_settings_to_fix(remote, settings, issue_token, caplog):
    settings.OAUTH_RESOURCE_SERVER_SECRET = "cs_wrong"
    call("/v2/bookings", issue_token("BOOKING_READ"))
    assert "OAUTH_RESOURCE_SERVER_ID and OAUTH_RESOURCE_SERVER_SECRET" in caplog.text


def deploy_check_messages():
    from scopes.checks import check_introspection_credentials

    return check_introspection_credentials()


def test_check_deploy_accepts_good_credentials(remote):
    assert deploy_check_messages() == []


def test_check_deploy_names_refused_credentials(remote, settings):
    settings.OAUTH_RESOURCE_SERVER_SECRET = "cs_typo"
    [problem] = deploy_check_messages()
    assert problem.id == "scopes.E004" and "OAUTH_RESOURCE_SERVER_SECRET" in problem.hint
    assert "cs_typo" not in problem.msg + problem.hint


def test_check_deploy_warns_when_the_server_cannot_be_reached(remote, settings):
    settings.OAUTH_INTROSPECTION_URL = f"http://127.0.0.1:{_closed_port()}/v2/auth/oauth2/introspect"
    [problem] = deploy_check_messages()
    assert problem.id == "scopes.W004"


def test_the_credentials_check_runs_only_with_deploy(remote):
    from django.core.checks import registry

    assert "scopes" in registry.registry.tags_available(deployment_checks=True)
    plain = {check.__name__ for check in registry.registry.get_checks(include_deployment_checks=False)}
    assert "check_introspection_credentials" not in plain
