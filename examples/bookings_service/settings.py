"""An example resource server: a separate Django service that serves part of the scheduling API.

It has a database of its own (the user's bookings, SQLite at `OAUTH_BOOKINGS_DATABASE`, default
a file in the temporary directory; migrated when the WSGI application starts) and imports nothing
from the authorization server but `scopes`: bearer tokens
are verified by introspection (RFC 7662) as a resource server, or locally when they are JWTs, and
scopes are enforced by the same rules as in the authorization server's own process. Configured
only by the environment:

- `OAUTH_TOKEN_FORMAT`: `opaque` (default) verifies every token by introspection
  (scopes.introspection); `jwt` verifies JWT access tokens here with the authorization server's
  JWKS and status lists (scopes.jwt; register this service with `--token-format jwt`), and sends
  any opaque token to introspection when the credentials below are set. JWT mode reads
  `OAUTH_ISSUER` (the authorization server, default the introspection URL's origin),
  `OAUTH_JWT_LEEWAY` (30), `OAUTH_STATUS_LIST_MAX_STALENESS` (60) and `OAUTH_JWKS_MAX_AGE` (300: less
  than the authorization server's OAUTH_SIGNING_KEY_PUBLISH_AHEAD, so a rotated-in key is known here
  before it signs)

- `OAUTH_INTROSPECTION_URL` (default http://localhost:8000/v2/auth/oauth2/introspect, `make run`'s)
- `OAUTH_RESOURCE_SERVER_ID`, `OAUTH_RESOURCE_SERVER_SECRET` (from
  `manage.py oauthclient create --resource-server` on the authorization server; required for
  introspection, optional in JWT mode)
- `OAUTH_INTROSPECTION_CACHE_SECONDS` (default 0: ask on every request)
- `OAUTH_RESOURCE_URI` (default http://127.0.0.1:8001/v2): this service's identity as a protected
  resource (RFC 8707 audience, RFC 9728 metadata at /.well-known/oauth-protected-resource/v2);
  `OAUTH_REQUIRE_AUDIENCE=1` refuses tokens not bound to it
- optional: `OAUTH_ISSUER` (for the OpenAPI document; default: the introspection URL's origin),
  `DJANGO_SECRET_KEY`, `DJANGO_ALLOWED_HOSTS`, `DJANGO_DEBUG`, `OAUTH_INTROSPECTION_TIMEOUT`.
"""

import os
import secrets
import tempfile
from urllib.parse import urlsplit


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def _env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = _env(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, not {raw!r}") from None
    if value < minimum:
        raise SystemExit(f"{name} must be at least {minimum}, not {value}")
    return value


def _env_bool(name: str, default: bool) -> bool:
    raw = _env(name, "1" if default else "0")
    if raw not in ("0", "1"):
        raise SystemExit(f"{name} must be 0 or 1, not {raw!r}")
    return raw == "1"


DEBUG = _env_bool("DJANGO_DEBUG", False)
# This service signs nothing (no sessions, no cookies, no forms): a per-process key is enough
# locally; production sets one like any Django service.
SECRET_KEY = _env("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50)
ALLOWED_HOSTS = [host.strip() for host in _env("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",")]

OAUTH_INTROSPECTION_URL = _env("OAUTH_INTROSPECTION_URL", "http://localhost:8000/v2/auth/oauth2/introspect")
OAUTH_RESOURCE_SERVER_ID = _env("OAUTH_RESOURCE_SERVER_ID")
OAUTH_RESOURCE_SERVER_SECRET = _env("OAUTH_RESOURCE_SERVER_SECRET")
OAUTH_INTROSPECTION_CACHE_SECONDS = _env_int("OAUTH_INTROSPECTION_CACHE_SECONDS", 0)
OAUTH_INTROSPECTION_TIMEOUT = _env_int("OAUTH_INTROSPECTION_TIMEOUT", 5, minimum=1)
OAUTH_TOKEN_FORMAT = _env("OAUTH_TOKEN_FORMAT", "opaque")
VERIFIERS = {"opaque": "scopes.introspection.IntrospectionVerifier", "jwt": "scopes.jwt.JwtVerifier"}
if OAUTH_TOKEN_FORMAT not in VERIFIERS:
    raise SystemExit(f"OAUTH_TOKEN_FORMAT must be opaque or jwt, not {OAUTH_TOKEN_FORMAT!r}")
OAUTH_TOKEN_VERIFIER = VERIFIERS[OAUTH_TOKEN_FORMAT]
OAUTH_JWT_LEEWAY = _env_int("OAUTH_JWT_LEEWAY", 30)
OAUTH_STATUS_LIST_MAX_STALENESS = _env_int("OAUTH_STATUS_LIST_MAX_STALENESS", 60, minimum=1)
OAUTH_JWKS_MAX_AGE = _env_int("OAUTH_JWKS_MAX_AGE", 300, minimum=1)
_origin = urlsplit(OAUTH_INTROSPECTION_URL)
OAUTH_ISSUER = _env("OAUTH_ISSUER", f"{_origin.scheme}://{_origin.netloc}").rstrip("/")
OAUTH_RESOURCE_URI = _env("OAUTH_RESOURCE_URI", "http://127.0.0.1:8001/v2").rstrip("/")
OAUTH_REQUIRE_AUDIENCE = _env("OAUTH_REQUIRE_AUDIENCE", "0") == "1"
OAUTH_RESOURCE_NAME = _env("OAUTH_RESOURCE_NAME", "Example bookings service")

INSTALLED_APPS = ["rest_framework", "drf_spectacular", "scopes", "examples.bookings_service"]
MIDDLEWARE = ["django.middleware.security.SecurityMiddleware", "django.middleware.common.CommonMiddleware"]
ROOT_URLCONF = "examples.bookings_service.urls"
WSGI_APPLICATION = "examples.bookings_service.wsgi.application"
# Its own bookings (models.py); everything it knows about a token still comes from the token.
OAUTH_BOOKINGS_DATABASE = _env(
    "OAUTH_BOOKINGS_DATABASE", os.path.join(tempfile.gettempdir(), "example-bookings-service.sqlite3")
)
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": OAUTH_BOOKINGS_DATABASE}}
# 0: keep nothing (GET answers an empty list, POST 503, no call recorded): `make bench` measures the
# token check alone this way, as the project's own in-process route does.
OAUTH_BOOKINGS_STORE = _env_bool("OAUTH_BOOKINGS_STORE", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Active introspection answers (OAUTH_INTROSPECTION_CACHE_SECONDS > 0) are kept per process.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
USE_TZ = True
APPEND_SLASH = False

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["scopes.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["scopes.permissions.HasRequiredScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["scopes.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "scopes.exception_handlers.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "scopes.openapi.ScopedAutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Bookings service (example resource server)",
    "DESCRIPTION": "Part of the scheduling API, served by a separate service that verifies tokens by introspection.",
    "VERSION": "2",
    "SCHEMA_PATH_PREFIX": "/v2",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": _env("DJANGO_LOG_LEVEL", "INFO")},
}
