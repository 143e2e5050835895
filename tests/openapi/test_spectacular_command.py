"""`manage.py spectacular --validate --fail-on-warn` is warning-free, for this project and for the
example resource server, and the example's document matches its URL configuration."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_ENV = {
    "OAUTH_INTROSPECTION_URL": "http://127.0.0.1:9/v2/auth/oauth2/introspect",
    "OAUTH_RESOURCE_SERVER_ID": "example-id",
    "OAUTH_RESOURCE_SERVER_SECRET": "example-secret",
}


def run(args, **env) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    environment.update(env)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=False
    )


def spectacular(manage: str, **env) -> dict:
    result = run([manage, "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json"], **env)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr and "Error" not in result.stderr, result.stderr
    return json.loads(result.stdout)


def test_the_projects_schema_is_warning_free():
    document = spectacular("manage.py", DJANGO_SETTINGS_MODULE="config.settings_test")
    assert document["paths"]["/v2/me"]["patch"]["security"] == [{"oauth2": ["PROFILE_WRITE"]}]
    flows = document["components"]["securitySchemes"]["oauth2"]["flows"]["authorizationCode"]
    assert len(flows["scopes"]) == 46 and flows["authorizationUrl"].endswith("/auth/oauth2/authorize")


ROUTES_SCRIPT = """
import json, os, sys
sys.path.insert(0, os.getcwd())
os.environ["DJANGO_SETTINGS_MODULE"] = "examples.bookings_service.settings"
import django
django.setup()
from scopes.checks import routes
from scopes.declarations import served_methods
print(json.dumps({path: [m.lower() for m in served_methods(view)] for path, _k, view in routes()}))
"""


def test_the_example_services_schema_is_warning_free_and_matches_its_routes():
    document = spectacular("examples/bookings_service/manage.py", **EXAMPLE_ENV)
    result = run(["-c", ROUTES_SCRIPT], **EXAMPLE_ENV)
    assert result.returncode == 0, result.stderr
    routed = {path: set(methods) - {"head"} for path, methods in json.loads(result.stdout).items()}
    routed.pop("/v2/schema/")
    # RFC 9728 metadata (scopes.metadata): a well-known document, like RFC 8414's, not an API operation.
    assert routed.pop("/.well-known/oauth-protected-resource") == {"get"}
    assert routed.pop("/.well-known/oauth-protected-resource/{suffix}") == {"get"}
    assert {path: set(operations) for path, operations in document["paths"].items()} == routed
    paths = document["paths"]
    assert paths["/v2/bookings"]["get"]["security"] == [{"oauth2": ["BOOKING_READ"]}]
    assert paths["/v2/bookings"]["post"]["security"] == [{"oauth2": ["BOOKING_WRITE"]}]
    assert paths["/v2/teams/{teamId}/bookings"]["get"]["security"] == [{"oauth2": ["TEAM_BOOKING_READ"]}]
    assert paths["/v2/organizations/{orgId}/teams/{teamId}/bookings"]["get"]["security"] == [
        {"oauth2": ["ORG_BOOKING_READ"]}
    ]
    assert "security" not in paths["/v2/slots"]["get"]
    assert paths["/v2/slots"]["get"]["description"].startswith("Free slots to book")


def test_the_example_service_passes_its_start_up_checks():
    result = run(["examples/bookings_service/manage.py", "check"], **EXAMPLE_ENV)
    assert result.returncode == 0 and "no issues" in result.stdout, result.stderr
