"""What the bench's parts share (no model imports: stock DOT and locust load this too)."""

import base64
import hashlib
import hmac
import math
import struct


def me_payload(user) -> dict:
    """The body of GET /v2/me, with the profile defaults (the floor and stock read no profile)."""
    return {
        "status": "success",
        "data": {
            "id": user.pk,
            "username": user.username,
            "email": user.email,
            "name": "",
            "timeZone": "UTC",
            "locale": "en",
            "timeFormat": 24,
            "weekStart": "Monday",
        },
    }


# Each target's routes, by name (the load generator's and bench/inprocess.py's).
ROUTES = {
    "project": {
        "me": "/v2/me",
        "token": "/v2/auth/oauth2/token",
        "authorize": "/auth/oauth2/authorize",
        "consent": "/auth/oauth2/authorize/allow",
        "introspect": "/v2/auth/oauth2/introspect",
        "status_list": "/v2/auth/oauth2/status-lists/",
        "login": "/accounts/login/",  # scenario 9
        "second_factor": "/accounts/2fa/authenticate/",  # scenario 9t: the sign-in's second step
        # The framework floor (scenario 0): DRF's empty view stands for the project's side.
        "empty": "/floor/empty-drf",
    },
    # Scenario 6: the example resource server's GET /v2/bookings, verified in the project's own
    # process (local), or by the example service through introspection, without and with its cache.
    "local": {"bookings": "/local/v2/bookings"},
    "remote": {"bookings": "/v2/bookings"},
    "remote-cached": {"bookings": "/v2/bookings"},
    # JWT access tokens: the project's token endpoint with codes bound to a JWT resource server
    # (scenarios 2 and 3), and the example service verifying JWTs itself (scenario 6).
    "jwt": {
        "token": "/v2/auth/oauth2/token",
        "bookings": "/v2/bookings",
        "status_list": "/v2/auth/oauth2/status-lists/",
    },
    # Scenario 8: the project's /v2/me with 100,000 self-registered clients in its database.
    "registered": {"me": "/v2/me"},
    "floor": {
        "me": "/floor/me",
        "token": "/floor/token",
        "authorize": "/floor/authorize",
        "consent": "/floor/authorize/allow",
        "introspect": "/floor/introspect",
        "empty": "/floor/empty",
    },
    # DOT's consent form posts back to the authorize URL itself, with `allow` in the body.
    "stock": {
        "me": "/stock/me",
        "token": "/stock/o/token/",
        "authorize": "/stock/o/authorize/",
        "consent": "/stock/o/authorize/",
    },
}


# The resource server whose tokens are JWTs in the bench (the example service in JWT mode).
JWT_RESOURCE = "http://127.0.0.1:8002/v2"
# Scenario 10 (token exchange): the example MCP server's resource URI, which the seeded subject
# tokens are bound to, and the bookings service it exchanges toward (any port: URIs, not URLs).
MCP_RESOURCE = "http://127.0.0.1:8931/mcp"
EXCHANGE_RESOURCE = "http://127.0.0.1:8003/v2"

# Seeded credentials are numbered: the seeder writes rows for a range of numbers with one
# INSERT ... SELECT FROM generate_series, and the load generator computes the same values.
# Both sides must agree, so the formats live here, in Python and in SQL.
REDIRECT_URI = "http://127.0.0.1:8765/cb"


def token_value(number: int) -> str:
    """A seeded access token (43 characters, like a real one)."""
    return f"bt{number:041d}"


def code_value(number: int) -> str:
    """A seeded authorization code."""
    return f"bc{number:041d}"


TOKEN_VALUE_SQL = "'bt' || lpad(i::text, 41, '0')"
CODE_VALUE_SQL = "'bc' || lpad(i::text, 41, '0')"


def sha256_sql(value_sql: str) -> str:
    """SQL for the hex SHA-256 of a text value (oauthclients.models.digest, DOT's token_checksum)."""
    return f"encode(sha256(convert_to({value_sql}, 'UTF8')), 'hex')"


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of a sorted, non-empty list."""
    rank = math.ceil(round(q * len(ordered), 9))  # round: 0.99 * 100 is not quite 99 in floating point
    return ordered[max(0, rank - 1)]


def request_stats(
    latencies: list[float], queries: list[int], failures: int, seconds: float, round_trips: list[int] = ()
) -> dict:
    """Throughput, latency percentiles (ms), queries and database round trips per request of one request name."""
    ordered = sorted(latencies)
    return {
        "count": len(ordered),
        "failures": failures,
        "rps": len(ordered) / seconds,
        "p50_ms": percentile(ordered, 0.50),
        "p99_ms": percentile(ordered, 0.99),
        "mean_ms": sum(ordered) / len(ordered),
        "queries": (sum(queries) / len(queries)) if queries else None,
        "queries_max": max(queries) if queries else None,
        "round_trips": (sum(round_trips) / len(round_trips)) if round_trips else None,
    }


TOTP_PERIOD = 30  # allauth's defaults (MFA_TOTP_PERIOD, MFA_TOTP_DIGITS), which the project keeps


def totp_period(at: float) -> int:
    """The number of the 30 s period `at` (seconds since the epoch) falls in: RFC 6238's T."""
    return int(at) // TOTP_PERIOD


def totp_code(secret: str, period: int) -> str:
    """An authenticator app's code for a base32 secret and a period (RFC 6238: HMAC-SHA1, 6 digits)."""
    digest = hmac.new(base64.b32decode(secret, casefold=True), struct.pack(">Q", period), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return f"{value % 10**6:06d}"
