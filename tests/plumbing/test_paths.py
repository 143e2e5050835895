"""Which kind of endpoint a path is: one table (plumbing/paths.py), asked by every caller.

Each kind is tested on a real path of the URLconf, through the callers that act on it (the error
handlers, the request limits, allauth's middleware, the staff rule, the metrics' endpoint label);
and a guard fails if a path prefix of the table is written anywhere else in the code.
"""

import ast
import subprocess
from pathlib import Path

import pytest
from django.test import Client, RequestFactory
from django.urls import resolve

from plumbing import errors, paths, requestlimits
from plumbing.paths import EndpointKind, endpoint_kind, endpoint_name, is_machine_path
from tests.factories import make_user

ROOT = Path(__file__).resolve().parents[2]

KINDS = {
    "/v2/auth/oauth2/token": EndpointKind.OAUTH,
    "/v2/auth/oauth2/status-lists/3": EndpointKind.OAUTH,
    "/v2/auth/oauth2/register/abc": EndpointKind.OAUTH,
    "/v2/me": EndpointKind.API,
    "/v2": EndpointKind.API,
    "/v2x": EndpointKind.PAGE,  # a prefix covers its own path and what is under it, never a longer word
    "/.well-known/openid-configuration": EndpointKind.METADATA,
    "/static/admin/css/base.css": EndpointKind.ASSET,
    "/logos/abc.png": EndpointKind.ASSET,
    "/auth/oauth2/authorize": EndpointKind.AUTHORIZATION,
    "/auth/oauth2/authorize/allow": EndpointKind.AUTHORIZATION,
    "/auth/oauth2/authorizex": EndpointKind.OAUTH_PAGE,
    "/auth/oauth2/logout": EndpointKind.OAUTH_PAGE,
    "/accounts/login/": EndpointKind.ACCOUNT,
    "/admin/login/": EndpointKind.ADMIN_DOOR,
    "/admin/logout/": EndpointKind.ADMIN_DOOR,
    "/admin/": EndpointKind.ADMIN,
    "/admin/oauthclients/oauthclient/": EndpointKind.ADMIN,
    "/adminx/": EndpointKind.PAGE,
    "/settings/developer/": EndpointKind.PAGE,
    "/": EndpointKind.PAGE,
}


@pytest.mark.parametrize(("path", "kind"), KINDS.items())
def test_each_path_has_its_kind(path, kind):
    assert endpoint_kind(path) == kind
    assert is_machine_path(path) is (kind in paths.MACHINE_KINDS)


def test_every_kind_is_some_path():
    assert set(KINDS.values()) == set(EndpointKind)


def test_the_named_prefixes_are_the_urlconfs():
    """The prefixes the table names itself (not settings) are where config/urls.py mounts them."""
    assert resolve(paths.ADMIN_PATH_PREFIX).url_name == "index"
    assert [resolve(door).url_name for door in paths.ADMIN_DOORS] == ["login", "logout"]
    assert resolve(paths.ACCOUNTS_PATH_PREFIX + "login/").url_name == "login"
    assert resolve(paths.LOGOS_PATH_PREFIX + "abc.png").url_name == "client_logo"
    assert resolve(paths.METADATA_PATH_PREFIX + "jwks.json").url_name == "jwks"
    assert resolve(paths.OAUTH_PAGES_PATH_PREFIX + "logout").url_name == "logout"


def test_the_table_follows_the_settings(settings):
    assert endpoint_kind("/v3/me") == EndpointKind.PAGE
    settings.API_PATH_PREFIX = "/v3"
    settings.OAUTH_API_PATH_PREFIX = "/v3/oauth/"
    settings.OAUTH_TOKEN_PATH = "/v3/oauth/token"
    settings.OAUTH_STATUS_LIST_PATH = "/v3/oauth/lists/"
    assert endpoint_kind("/v3/me") == EndpointKind.API
    assert endpoint_kind("/v3/oauth/token") == EndpointKind.OAUTH
    assert endpoint_kind("/v2/me") == EndpointKind.PAGE
    assert endpoint_name("/v3/oauth/token") == "token" and endpoint_name("/v2/auth/oauth2/token") is None
    assert endpoint_name("/v3/oauth/lists/7") == "status_list"


@pytest.mark.parametrize(
    ("path", "api", "oauth", "limits"),
    [
        ("/v2/auth/oauth2/token", True, True, "oauth"),
        ("/v2/me", True, False, "api"),
        ("/auth/oauth2/authorize", False, False, "authorize"),
        ("/auth/oauth2/logout", False, False, "authorize"),
        ("/.well-known/jwks.json", False, False, None),
        ("/accounts/login/", False, False, None),
        ("/admin/", False, False, None),
    ],
)
def test_the_error_handlers_and_the_request_limits_ask_the_table(path, api, oauth, limits):
    request = RequestFactory().get(path)
    assert errors.is_api(request) is api
    assert errors.is_oauth_endpoint(request) is oauth
    assert requestlimits._kind(path) == limits


def test_a_machine_path_skips_allauth_and_the_language_and_a_page_does_not(db):
    page = Client().get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de")
    assert page.status_code == 200 and page["Content-Language"] == "de"
    document = Client().get("/.well-known/openid-configuration", HTTP_ACCEPT_LANGUAGE="de")
    assert document.status_code == 200 and "Content-Language" not in document


def test_the_staff_rule_guards_the_admin_but_not_its_doors(db, settings):
    settings.OAUTH_STAFF_MFA_REQUIRED = True
    browser = Client()
    browser.force_login(make_user("staffer", staff=True), backend="profiles.backends.ProfileModelBackend")
    refused = browser.get("/admin/")
    assert refused.status_code == 302 and refused["Location"].startswith("/accounts/2fa/?next=")
    # The doors out and in are open: logging out does not ask for a factor first.
    door = browser.post("/admin/logout/")
    assert not door.get("Location", "").startswith("/accounts/2fa/")


# --- the guard: no prefix of the table is written anywhere else ---------------------------------

# The table's own prefixes, as literals. Settings are read from config/settings.py.
PREFIXES = ("/v2", "/auth/oauth2", "/.well-known/", "/static/", "/logos/", "/accounts/", "/admin/")
# Where a prefix literal is right: the table and the settings it reads; scopes, which ships alone
# and imports nothing of ours (RFC 9728's well-known path, the API's documented URLs, a JWKS URL);
# an upstream provider's discovery document (its path, not ours); the URLs the demo prints.
ALLOWED = {
    "plumbing/paths.py",
    "config/settings.py",
    "oauthflows/token/idjag.py",
    "config/management/commands/seed_demo.py",
}
ALLOWED_PACKAGES = ("scopes/",)
SKIPPED = ("tests/", "bench/", "examples/", "docs/")


def _sources() -> list[str]:
    names = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [
        name
        for name in names.split()
        if not name.startswith(SKIPPED) and "/migrations/" not in name and (ROOT / name).is_file()
    ]


def prefix_literals(source: str) -> list[str]:
    """Every string literal (docstrings aside) that is a path under one of the table's prefixes."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and node.value.startswith(PREFIXES)
    ]


def path_prefix_checks(source: str) -> list[int]:
    """Lines that test a request path's start: `<…>.path.startswith(…)`, `path_info.startswith(…)`."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "startswith"
        and (
            (isinstance(node.func.value, ast.Attribute) and node.func.value.attr in ("path", "path_info"))
            or (isinstance(node.func.value, ast.Name) and node.func.value.id == "path")
        )
    ]


# A path test that is not a kind: the registration's management URL (RFC 7592), one endpoint.
PATH_CHECKS_ALLOWED = {"plumbing/paths.py", "oauthflows/cors.py"}


def test_no_code_but_the_table_writes_a_path_prefix():
    found = {
        name: literals
        for name in _sources()
        if name not in ALLOWED
        and not name.startswith(ALLOWED_PACKAGES)
        and (literals := prefix_literals((ROOT / name).read_text(encoding="utf-8")))
    }
    assert found == {}, "ask plumbing.paths.endpoint_kind instead of naming a prefix"


def test_no_code_but_the_table_tests_where_a_path_starts():
    found = {
        name: lines
        for name in _sources()
        if name not in PATH_CHECKS_ALLOWED and (lines := path_prefix_checks((ROOT / name).read_text(encoding="utf-8")))
    }
    assert found == {}, "ask plumbing.paths.endpoint_kind instead of testing a prefix"


def test_the_guards_catch_a_prefix_of_their_own():
    source = (
        'ADMIN = "/admin/"\n\ndef f(request):\n    """/admin/ in prose."""\n'
        "    return request.path_info.startswith(ADMIN)\n"
    )
    assert prefix_literals(source) == ["/admin/"]
    assert path_prefix_checks(source) == [5]
    assert path_prefix_checks("def f(path):\n    return path.startswith('/v2/')\n") == [2]
    assert len(_sources()) > 100
