"""Settings of the example MCP server: the bookings service's `OAUTH_*` variables (docs/walkthrough.md, "A second
service"), read from the environment.

- `OAUTH_RESOURCE_SERVER_ID`, `OAUTH_RESOURCE_SERVER_SECRET` (required): a resource server made with
  `manage.py oauthclient create --resource-server --resource-uri http://127.0.0.1:PORT/mcp`;
- `OAUTH_ISSUER` (default http://localhost:8000, `make run`'s): the authorization server; the
  introspection and token endpoints follow it (`OAUTH_INTROSPECTION_URL` overrides the first),
  `OAUTH_INTROSPECTION_CACHE_SECONDS` (default 0), `OAUTH_INTROSPECTION_TIMEOUT` (default 5);
- `OAUTH_BOOKINGS_URL` (default http://127.0.0.1:8001/v2/bookings, examples/bookings_service's) and
  `OAUTH_BOOKINGS_RESOURCE` (its resource URI, default the URL without `/bookings`): where
  `list_bookings` and `create_booking` go, with a token exchanged for one bound to that service
  (RFC 8693: the MCP server never passes on the token it received);
- `OAUTH_RESOURCE_URI`: set by `__main__` to http://HOST:PORT/mcp unless given;
- `OAUTH_REQUIRE_AUDIENCE` (default 1 here: an MCP server accepts only tokens bound to it, as the
  MCP authorization rules require; 0 also accepts tokens issued without `resource`).
"""

import os
import secrets
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


SECRET_KEY = _env("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50)
DEBUG = False
INSTALLED_APPS: list[str] = []
DATABASES: dict = {}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
USE_TZ = True

OAUTH_RESOURCE_SERVER_ID = _env("OAUTH_RESOURCE_SERVER_ID")
OAUTH_RESOURCE_SERVER_SECRET = _env("OAUTH_RESOURCE_SERVER_SECRET")
OAUTH_INTROSPECTION_CACHE_SECONDS = _env_int("OAUTH_INTROSPECTION_CACHE_SECONDS", 0)
OAUTH_INTROSPECTION_TIMEOUT = _env_int("OAUTH_INTROSPECTION_TIMEOUT", 5, minimum=1)
OAUTH_TOKEN_VERIFIER = "scopes.introspection.IntrospectionVerifier"
# The issuer first, and the endpoints after it: an issuer on another port moves them all (an
# introspection URL left at port 8000 made every call a 503). An explicit introspection URL alone
# still names the issuer by its origin, as before.
_introspection = _env("OAUTH_INTROSPECTION_URL")
_origin = urlsplit(_introspection or "http://localhost:8000")
OAUTH_ISSUER = _env("OAUTH_ISSUER", f"{_origin.scheme}://{_origin.netloc}").rstrip("/")
OAUTH_INTROSPECTION_URL = _introspection or OAUTH_ISSUER + "/v2/auth/oauth2/introspect"
OAUTH_TOKEN_URL = OAUTH_ISSUER + "/v2/auth/oauth2/token"
OAUTH_BOOKINGS_URL = _env("OAUTH_BOOKINGS_URL", "http://127.0.0.1:8001/v2/bookings").rstrip("/")
OAUTH_BOOKINGS_RESOURCE = _env("OAUTH_BOOKINGS_RESOURCE", OAUTH_BOOKINGS_URL.removesuffix("/bookings")).rstrip("/")
OAUTH_RESOURCE_URI = _env("OAUTH_RESOURCE_URI", "http://127.0.0.1:8931/mcp").rstrip("/")
OAUTH_REQUIRE_AUDIENCE = _env("OAUTH_REQUIRE_AUDIENCE", "1") == "1"
OAUTH_RESOURCE_NAME = _env("OAUTH_RESOURCE_NAME", "Scheduling MCP server (example)")
OAUTH_RESOURCE_DOCUMENTATION = _env("OAUTH_RESOURCE_DOCUMENTATION", "") or None

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": _env("DJANGO_LOG_LEVEL", "INFO")},
}
