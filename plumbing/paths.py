"""Which kind of endpoint a path is, and which endpoint: one table each, read by everything that asks.

The error handlers (plumbing.errors: the /v2 shape or RFC 6749 §5.2's), the request limits
(plumbing.requestlimits), the access line and the metrics (operations.access), allauth's middleware
and the page's language (accounts.middleware, accounts.languages: not on machine paths), the staff
rule (accounts.middleware: the admin but its doors) and the admin's time zone (profiles.middleware)
all ask `endpoint_kind(path)`; none keeps a prefix of its own (tests/plumbing/test_paths.py fails
if one does).

Machine paths serve apps, resource servers and a page's subresources, never a page a person
reads: the token, revocation, introspection, userinfo and status-list endpoints and the /v2 API,
the metadata documents, static files and client logos. Middleware that works for people lets them
straight through, so that their cost per request stays what the bench measures
(docs/performance.md).

The prefixes that are settings (API_PATH_PREFIX, OAUTH_API_PATH_PREFIX, OAUTH_AUTHORIZE_PATH,
STATIC_URL) are read from them; the others are named here, and tests/plumbing/test_paths.py holds
them to the URLconf's.
"""

import enum
from functools import cache

from django.conf import settings
from django.core.signals import setting_changed


class EndpointKind(enum.StrEnum):
    OAUTH = "oauth"  # OAUTH_API_PATH_PREFIX: token, revocation, introspection, registration, userinfo, status lists
    API = "api"  # the rest of API_PATH_PREFIX: the API's error JSON
    METADATA = "metadata"  # /.well-known/: the server's and the API's metadata, the keys
    ASSET = "asset"  # static files and client logos
    AUTHORIZATION = "authorization"  # OAUTH_AUTHORIZE_PATH and its Allow and Deny answers (HTML)
    OAUTH_PAGE = "oauth_page"  # the rest of /auth/oauth2/: OpenID Connect's logout (HTML)
    ACCOUNT = "account"  # /accounts/: sign-in and its steps, one's addresses and second factors
    ADMIN_DOOR = "admin_door"  # the admin's login and logout: open to a staff member without a factor
    ADMIN = "admin"  # every other admin page
    PAGE = "page"  # everything else: the developer pages, connected apps, the landing page


# Answered in JSON to apps and services; never a page a person reads.
MACHINE_KINDS = frozenset({EndpointKind.OAUTH, EndpointKind.API, EndpointKind.METADATA, EndpointKind.ASSET})
# Answered in the API's error JSON (RFC 6749 §5.2's shape is a part of it: EndpointKind.OAUTH).
API_KINDS = frozenset({EndpointKind.OAUTH, EndpointKind.API})
# The admin, its doors included.
ADMIN_KINDS = frozenset({EndpointKind.ADMIN, EndpointKind.ADMIN_DOOR})

METADATA_PATH_PREFIX = "/.well-known/"
LOGOS_PATH_PREFIX = "/logos/"
OAUTH_PAGES_PATH_PREFIX = "/auth/oauth2/"
ACCOUNTS_PATH_PREFIX = "/accounts/"
ADMIN_PATH_PREFIX = "/admin/"
ADMIN_LOGIN_PATH = "/admin/login/"  # Django's admin login, through ours (config/urls.py)
ADMIN_DOORS = (ADMIN_LOGIN_PATH, "/admin/logout/")

# The settings the tables read: a test that overrides one gets the new answer.
_SETTINGS_READ = frozenset(
    {
        "API_PATH_PREFIX",
        "OAUTH_API_PATH_PREFIX",
        "OAUTH_AUTHORIZE_PATH",
        "STATIC_URL",
        "OAUTH_TOKEN_PATH",
        "OAUTH_INTROSPECT_PATH",
        "OAUTH_REVOKE_PATH",
        "OAUTH_REGISTRATION_PATH",
        "OAUTH_USERINFO_PATH",
        "OAUTH_STATUS_LIST_PATH",
    }
)


@cache
def kind_table() -> tuple[tuple[str, EndpointKind], ...]:
    """(prefix, kind), the longest prefix first, so that the most specific row answers. A prefix
    `/a/b/` (or `/a/b`) covers `/a/b` and everything under `/a/b/`, never `/a/bc`."""
    rows = [
        (settings.OAUTH_API_PATH_PREFIX, EndpointKind.OAUTH),
        (settings.API_PATH_PREFIX, EndpointKind.API),
        (METADATA_PATH_PREFIX, EndpointKind.METADATA),
        (LOGOS_PATH_PREFIX, EndpointKind.ASSET),
        (settings.OAUTH_AUTHORIZE_PATH, EndpointKind.AUTHORIZATION),
        (OAUTH_PAGES_PATH_PREFIX, EndpointKind.OAUTH_PAGE),
        (ACCOUNTS_PATH_PREFIX, EndpointKind.ACCOUNT),
        *((door, EndpointKind.ADMIN_DOOR) for door in ADMIN_DOORS),
        (ADMIN_PATH_PREFIX, EndpointKind.ADMIN),
    ]
    if settings.STATIC_URL and settings.STATIC_URL.startswith("/"):  # not a CDN's URL
        rows.append((settings.STATIC_URL, EndpointKind.ASSET))
    normalized = [(prefix.rstrip("/"), kind) for prefix, kind in rows]
    return tuple(sorted(normalized, key=lambda row: len(row[0]), reverse=True))


def endpoint_kind(path: str) -> EndpointKind:
    for prefix, kind in kind_table():
        if path.startswith(prefix) and (len(path) == len(prefix) or path[len(prefix)] == "/"):
            return kind
    return EndpointKind.PAGE


def is_machine_path(path: str) -> bool:
    return endpoint_kind(path) in MACHINE_KINDS


# --- which endpoint: the access line's and the metrics' `endpoint` label ---------------------------


@cache
def endpoint_table() -> dict[str, str]:
    """Each endpoint's path and its name (the status lists, a prefix, are endpoint_name's)."""
    authorize = settings.OAUTH_AUTHORIZE_PATH
    return {
        settings.OAUTH_TOKEN_PATH: "token",
        authorize: "authorize",
        f"{authorize}/allow": "consent_allow",
        f"{authorize}/deny": "consent_deny",
        settings.OAUTH_INTROSPECT_PATH: "introspect",
        settings.OAUTH_REVOKE_PATH: "revoke",
        settings.OAUTH_REGISTRATION_PATH: "register",
        settings.OAUTH_USERINFO_PATH: "userinfo",
    }


def endpoint_names() -> tuple[str, ...]:
    """Every name endpoint_name can return."""
    return (*endpoint_table().values(), "status_list")


def endpoint_name(path: str) -> str | None:
    name = endpoint_table().get(path)
    if name is None and path.startswith(settings.OAUTH_STATUS_LIST_PATH):
        return "status_list"
    return name


def _forget(*, setting, **kwargs):
    if setting in _SETTINGS_READ:
        kind_table.cache_clear()
        endpoint_table.cache_clear()


setting_changed.connect(_forget)
