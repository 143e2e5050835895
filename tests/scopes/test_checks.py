"""The start-up check (scopes.checks): every routed scope declaration is valid, or `manage.py check` fails."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from scopes.checks import check_scope_declarations


def messages(urlconf) -> list[str]:
    return [error.msg for error in check_scope_declarations(urlconf=urlconf)]


def test_the_projects_own_declarations_pass():
    assert messages(None) == []
    out = StringIO()
    call_command("check", stdout=out)
    assert "no issues" in out.getvalue()


def test_the_declaration_examples_pass_except_the_two_levels_that_have_no_scope():
    found = messages("tests.scopes.urls_for_tests")
    assert found and all(
        ("WorkflowsApi at /v2/organizations/{orgId}/workflows" in m and "ORG_WORKFLOW_" in m)
        or ("WebhooksApi at /v2/teams/{teamId}/webhooks" in m and "TEAM_WEBHOOK_" in m)
        for m in found
    ), found


@pytest.mark.parametrize(
    "view, path, problem",
    [
        ("TypoApi", "/v2/typo", "names an unknown scope 'BOOKINGS_READ'"),
        ("UnservedMethodApi", "/v2/unserved", "names PUT, a method the view does not serve"),
        ("LowerCaseMethodApi", "/v2/lowercase", "'get', which is not an HTTP method"),
        ("UnknownResourceApi", "/v2/unknown-resource", "scope_resource 'BOOKINGS' is not a resource of any scope"),
        ("PersonalOnlyResourceApi", "/v2/teams/{teamId}/webhooks", "needs TEAM_WEBHOOK_READ for GET"),
    ],
)
def test_each_mistake_is_an_error_naming_the_view_and_its_route(view, path, problem):
    found = [m for m in messages("tests.scopes.urls_bad_declarations") if problem in m]
    assert found == [m for m in found if m.startswith(f"tests.scopes.urls_bad_declarations.{view} at {path}:")]
    assert found, messages("tests.scopes.urls_bad_declarations")


def test_a_valid_route_of_the_same_view_is_not_reported():
    assert not [m for m in messages("tests.scopes.urls_bad_declarations") if "at /v2/webhooks:" in m]


def test_manage_py_check_fails_on_them(settings):
    settings.ROOT_URLCONF = "tests.scopes.urls_bad_declarations"
    with pytest.raises(SystemCheckError, match="scopes.E001"):
        call_command("check", stdout=StringIO(), stderr=StringIO())


def test_a_missing_verifier_setting_is_an_error(settings):
    del settings.OAUTH_TOKEN_VERIFIER
    assert [e.id for e in check_scope_declarations()] == ["scopes.E002"]


def test_introspection_without_its_credentials_is_an_error(settings):
    settings.OAUTH_TOKEN_VERIFIER = "scopes.introspection.IntrospectionVerifier"
    settings.OAUTH_INTROSPECTION_URL = "http://127.0.0.1:8000/v2/auth/oauth2/introspect"
    settings.OAUTH_RESOURCE_SERVER_ID = "rs"
    errors = check_scope_declarations()
    assert [e.id for e in errors] == ["scopes.E003"] and "OAUTH_RESOURCE_SERVER_SECRET" in errors[0].msg
    settings.OAUTH_RESOURCE_SERVER_SECRET = "cs_x"
    assert check_scope_declarations() == []


def test_the_jwt_verifier_on_plain_http_elsewhere_than_loopback_is_an_error(settings):
    settings.OAUTH_TOKEN_VERIFIER = "scopes.jwt.JwtVerifier"
    settings.OAUTH_RESOURCE_URI = "https://bookings.example.com/v2"
    settings.OAUTH_ISSUER = "http://auth.example.com"
    errors = check_scope_declarations()
    assert [e.id for e in errors] == ["scopes.E004"] and "https" in errors[0].msg
    settings.OAUTH_ISSUER = "https://auth.example.com"
    assert check_scope_declarations() == []


def test_a_server_started_without_the_check_answers_503_not_500(settings, db, caplog):
    from django.test import Client

    settings.OAUTH_TOKEN_VERIFIER = "scopes.introspection.IntrospectionVerifier"  # and no credentials
    response = Client().get("/v2/me", HTTP_AUTHORIZATION="Bearer some-token")
    assert response.status_code == 503 and response.json()["error"]["code"] == "service_unavailable"
    assert "OAUTH_INTROSPECTION_URL must be set" in caplog.text
