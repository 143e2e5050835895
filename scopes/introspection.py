"""Verifying bearer tokens in another service: RFC 7662 introspection as a resource server.

Settings (all from the environment in examples/bookings_service):

- `OAUTH_INTROSPECTION_URL` — the authorization server's introspection endpoint;
- `OAUTH_RESOURCE_SERVER_ID`, `OAUTH_RESOURCE_SERVER_SECRET` — this service's credentials
  (`manage.py oauthclient create --resource-server` on the authorization server);
- `OAUTH_INTROSPECTION_CACHE_SECONDS` — keep an *active* answer this long (never past the token's
  `exp`; inactive answers are never kept). 0, the default, asks on every request, so a revocation
  takes effect at once; N seconds means a revoked token may still pass for up to N seconds;
- `OAUTH_INTROSPECTION_TIMEOUT` — seconds to connect and to read (default 5);
- `OAUTH_INTROSPECTION_CACHE` — which of Django's caches holds answers (default "default").

Only an answer with `token_type` Bearer (any case) is a bearer token: a refresh token, or an answer
without a type, is refused like an inactive one (401). The cache key is a SHA-256 digest of the
token, never the token. When the authorization server
cannot be reached, times out or answers anything but a 200 JSON object, the request gets 503
(scopes.verifiers.AuthorizationServerUnavailable): never 401, never 500, never "allowed".
"""

import base64
import hashlib
import logging
import secrets
import time
from urllib.parse import quote

import requests
from django.conf import settings
from django.core.cache import caches
from django.core.checks import Error, Warning
from django.core.exceptions import ImproperlyConfigured

from scopes.verifiers import AuthorizationServerUnavailable, TokenUser, TokenVerifier, Verification, VerifiedToken

logger = logging.getLogger(__name__)

CACHE_KEY_PREFIX = "oauth-introspection:"


def _setting(name: str, default=None):
    value = getattr(settings, name, default)
    if value in (None, ""):
        raise ImproperlyConfigured(f"{name} must be set to verify tokens by introspection.")
    return value


def cache_key(raw_token: str) -> str:
    return CACHE_KEY_PREFIX + hashlib.sha256(raw_token.encode("utf-8")).hexdigest()


def basic_authorization(client_id: str, secret: str) -> str:
    """RFC 6749 §2.3.1: each part form-urlencoded, then HTTP Basic."""
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


class IntrospectionVerifier(TokenVerifier):
    def __init__(self):
        self.url = _setting("OAUTH_INTROSPECTION_URL")
        self.client_id = _setting("OAUTH_RESOURCE_SERVER_ID")
        self.authorization = basic_authorization(self.client_id, _setting("OAUTH_RESOURCE_SERVER_SECRET"))
        self._warned_app_credentials = False
        self.cache_seconds = int(getattr(settings, "OAUTH_INTROSPECTION_CACHE_SECONDS", 0) or 0)
        self.cache = caches[getattr(settings, "OAUTH_INTROSPECTION_CACHE", "default")]
        self.timeout = float(getattr(settings, "OAUTH_INTROSPECTION_TIMEOUT", 5))
        # One session per process: connections to the authorization server are kept alive.
        self.session = requests.Session()
        self.session.headers.update({"Authorization": self.authorization, "Accept": "application/json"})

    def verify(self, raw_token: str) -> Verification | None:
        key = cache_key(raw_token) if self.cache_seconds > 0 else None
        claims = self.cache.get(key) if key else None
        if claims is None:
            claims = self._introspect(raw_token)
            if claims is None:
                return None  # inactive answers are never cached
            if key:
                # Never past the token's own expiry.
                ttl = min(self.cache_seconds, int(claims["exp"] - time.time()))
                if ttl > 0:
                    self.cache.set(key, claims, timeout=ttl)
        if claims["exp"] <= time.time():
            return None
        scopes = tuple(claims["scope"].split())
        return Verification(
            user=TokenUser(pk=claims["sub"], username=claims["username"]),
            token=VerifiedToken(
                scopes=scopes,
                unrestricted=bool(claims.get("unrestricted")) and not scopes,
                client_id=claims["client_id"],
                subject=claims["sub"],
                expires_at=int(claims["exp"]),
                audience=claims.get("aud", ()),
                actor=claims.get("actor", ""),
            ),
        )

    def _introspect(self, raw_token: str) -> dict | None:
        try:
            response = self.session.post(
                self.url,
                data={"token": raw_token, "token_type_hint": "access_token"},
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            logger.error("Token introspection failed: %s reaching %s", type(exc).__name__, self.url)
            raise AuthorizationServerUnavailable() from None
        if response.status_code == 401:
            # Not an outage: this service's own credentials are refused. Say which settings to fix.
            logger.error(
                "Token introspection failed: %s answered 401: it refuses this service's credentials. "
                "Check OAUTH_RESOURCE_SERVER_ID and OAUTH_RESOURCE_SERVER_SECRET (or whether the resource "
                "server was rejected); `manage.py check --deploy` tries them.",
                self.url,
            )
            raise AuthorizationServerUnavailable()
        if response.status_code != 200:
            # 429, 5xx: the server is overloaded or down. Nothing about the user's token.
            logger.error("Token introspection failed: %s answered %s", self.url, response.status_code)
            raise AuthorizationServerUnavailable()
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("active"), bool):
            logger.error("Token introspection failed: %s answered 200 without an RFC 7662 body", self.url)
            raise AuthorizationServerUnavailable()
        if not body["active"]:
            return None
        if str(body.get("token_type", "")).lower() != "bearer":
            # RFC 7662 §2.2 / RFC 6750: only an access token is a bearer token. An app introspecting
            # its own tokens is told about its refresh tokens too: never let one pass for a bearer.
            self._warn_if_an_apps_credentials(body)
            return None
        claims = _claims(body)
        if claims is None:
            logger.error("Token introspection failed: %s answered active without the claims needed", self.url)
            raise AuthorizationServerUnavailable()
        self._warn_if_an_apps_credentials(body)
        return claims

    def _warn_if_an_apps_credentials(self, body: dict) -> None:
        """A resource server grants nothing, so no token is ever its own: an active answer naming
        this service's own client_id means OAUTH_RESOURCE_SERVER_ID/SECRET are an app's credentials."""
        if body.get("client_id") == self.client_id and not self._warned_app_credentials:
            self._warned_app_credentials = True
            logger.error(
                "Configuration: OAUTH_RESOURCE_SERVER_ID is an app's client_id, not a resource server's. "
                "An app may introspect only its own tokens, so this service accepts nothing but that app's. "
                "Create resource-server credentials with `manage.py oauthclient create --resource-server`."
            )


def _claims(body: dict) -> dict | None:
    """The claims a resource server relies on, type-checked; None if any is missing or malformed."""
    strings = ("scope", "client_id", "username", "sub")
    if not all(isinstance(body.get(name), str) for name in strings):
        return None
    exp = body.get("exp")
    if not isinstance(exp, int) or isinstance(exp, bool):
        return None
    claims = {name: body[name] for name in strings}
    claims["exp"] = exp
    claims["unrestricted"] = body.get("unrestricted") is True
    # RFC 7662 §2.2 `aud`: a string or an array of strings; absent: no audience.
    aud = body.get("aud")
    if aud is None:
        claims["aud"] = ()
    elif isinstance(aud, str):
        claims["aud"] = (aud,)
    elif isinstance(aud, list) and all(isinstance(item, str) for item in aud):
        claims["aud"] = tuple(aud)
    else:
        return None
    act = body.get("act")
    claims["actor"] = act["sub"] if isinstance(act, dict) and isinstance(act.get("sub"), str) else ""
    return claims


def credentials_try():
    """Introspect a random token once with this service's credentials: None if they are accepted
    (the answer is `{"active": false}`), else a system check message saying what is wrong."""
    verifier = IntrospectionVerifier()
    try:
        response = verifier.session.post(
            verifier.url, data={"token": secrets.token_urlsafe(32)}, timeout=verifier.timeout, allow_redirects=False
        )
    except requests.RequestException as exc:
        return Warning(
            f"Could not reach {verifier.url} to try the introspection credentials ({type(exc).__name__}).",
            hint="Check OAUTH_INTROSPECTION_URL; requests will get 503 until it answers.",
            id="scopes.W004",
        )
    if response.status_code == 401:
        return Error(
            f"{verifier.url} refuses this service's credentials.",
            hint="Check OAUTH_RESOURCE_SERVER_ID and OAUTH_RESOURCE_SERVER_SECRET (made by `manage.py "
            "oauthclient create --resource-server` on the authorization server); every request would get 503.",
            id="scopes.E004",
        )
    if response.status_code != 200:
        return Warning(
            f"{verifier.url} answered {response.status_code} to a trial introspection.",
            hint="Check OAUTH_INTROSPECTION_URL: it should be the authorization server's /v2/auth/oauth2/introspect.",
            id="scopes.W004",
        )
    return None
