"""Verifying JWT access tokens (RFC 9068) in another service, without calling home per request.

`OAUTH_TOKEN_VERIFIER = "scopes.jwt.JwtVerifier"`. The authorization server signs the access
tokens whose audience is a resource server registered with `--token-format jwt`; this verifier
checks them with the server's published keys (JWKS) and learns of revocations from its token status
lists (draft-ietf-oauth-status-list), both fetched over HTTPS and kept in the process:

- the JOSE header: `typ` is `at+jwt` (RFC 9068 §2.1), `alg` on the allow-list (ES256, RS256 — never
  `none`, never HMAC, whatever the header says) and matching the key's type, `kid` names a key;
- the signature, with the JWKS key of that `kid`. An unknown `kid` refetches the JWKS (a rotated-in
  key), at most once every `OAUTH_JWKS_REFETCH_SECONDS` (5);
- the claims: `iss` is `OAUTH_ISSUER`, `aud` holds `OAUTH_RESOURCE_URI`, `exp` and `nbf` with
  `OAUTH_JWT_LEEWAY` seconds of leeway (30), `sub`, `client_id` and `scope` present;
- the status: `status.status_list.uri` must be on the issuer's origin (a token cannot send this
  service to fetch anything else); the list is a `statuslist+jwt` signed by the same keys, kept for
  its `ttl` and then fetched again. A set bit is a revoked token: refused within `ttl` seconds of
  the revocation. When the list cannot be fetched, the last one serves for up to
  `OAUTH_STATUS_LIST_MAX_STALENESS` seconds (60) after it was fetched; past that the request gets 503
  (scopes.verifiers.AuthorizationServerUnavailable), never "allowed".

A token that is not a JWT (an opaque token, issued for no audience or an opaque resource server)
goes to introspection when `OAUTH_INTROSPECTION_URL` and this service's credentials are set
(scopes.introspection), and is refused (401) otherwise. Answers (401, 403, the challenges) are the
ones every verifier gets (scopes.authentication, scopes.permissions).

Other settings: `OAUTH_JWKS_URL` (default `OAUTH_ISSUER` + /.well-known/jwks.json),
`OAUTH_JWT_FETCH_TIMEOUT` (seconds, 5), `OAUTH_JWKS_MAX_AGE` (seconds, 300: the JWKS is fetched
again this often, so that a withdrawn key stops verifying; if that fetch fails the keys held are
kept). http is accepted for the JWKS and the lists on loopback hosts only (development).
"""

import base64
import binascii
import json
import logging
import threading
import time
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from jwcrypto import jwk

from scopes.bearer import MAX_TOKEN_LENGTH
from scopes.introspection import IntrospectionVerifier
from scopes.loopback import is_loopback_host
from scopes.verifiers import (
    AuthorizationServerUnavailable,
    TokenUser,
    TokenVerifier,
    Verification,
    VerifiedToken,
    audience_includes,
)

logger = logging.getLogger(__name__)

ACCESS_TOKEN_TYPE = "at+jwt"
STATUS_LIST_TYPE = "statuslist+jwt"
# alg -> the key type it needs. No `none`, no HS256: a public key is never a MAC secret here.
ALGORITHMS = {"ES256": "EC", "RS256": "RSA"}


class Unverifiable(Exception):
    """The token is not one this service accepts (401)."""


def _b64decode(part: str) -> bytes:
    if not part or len(part) > MAX_TOKEN_LENGTH * 2:
        raise Unverifiable("empty or oversized part")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise Unverifiable("not base64url") from None


def _json_object(part: str) -> dict:
    try:
        value = json.loads(_b64decode(part))
    except (ValueError, RecursionError):
        raise Unverifiable("not JSON") from None
    if not isinstance(value, dict):
        raise Unverifiable("not a JSON object")
    return value


def _fetchable(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(parts.hostname))


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc.lower()


@dataclass
class _Key:
    algorithm_kty: str
    public: object  # a cryptography public key


@dataclass
class _StatusList:
    bits: bytes
    fetched_at: float
    ttl: float


class JwtVerifier(TokenVerifier):
    def __init__(self):
        self.issuer = (getattr(settings, "OAUTH_ISSUER", "") or "").rstrip("/")
        self.resource = (getattr(settings, "OAUTH_RESOURCE_URI", "") or "").rstrip("/")
        if not self.issuer or not self.resource:
            raise ImproperlyConfigured("OAUTH_ISSUER and OAUTH_RESOURCE_URI must be set to verify JWT access tokens.")
        self.jwks_url = getattr(settings, "OAUTH_JWKS_URL", "") or f"{self.issuer}/.well-known/jwks.json"
        for name, url in (("OAUTH_ISSUER", self.issuer), ("OAUTH_JWKS_URL", self.jwks_url)):
            if not _fetchable(url):
                raise ImproperlyConfigured(f"{name} must be an https URL (http only on a loopback host): {url}")
        self.leeway = float(getattr(settings, "OAUTH_JWT_LEEWAY", 30))
        self.refetch_seconds = float(getattr(settings, "OAUTH_JWKS_REFETCH_SECONDS", 5))
        self.jwks_max_age = float(getattr(settings, "OAUTH_JWKS_MAX_AGE", 300))
        self.max_staleness = float(getattr(settings, "OAUTH_STATUS_LIST_MAX_STALENESS", 60))
        self.timeout = float(getattr(settings, "OAUTH_JWT_FETCH_TIMEOUT", 5))
        self.session = requests.Session()
        self._keys: dict[str, _Key] = {}
        self._keys_fetched_at: float | None = None
        self._keys_lock = threading.Lock()
        self._lists: dict[str, _StatusList] = {}
        self._list_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._fallback = None
        if getattr(settings, "OAUTH_INTROSPECTION_URL", None) and getattr(settings, "OAUTH_RESOURCE_SERVER_ID", None):
            self._fallback = IntrospectionVerifier()

    # --- the token ---------------------------------------------------------------------------------

    def verify(self, raw_token: str) -> Verification | None:
        if raw_token.count(".") != 2:
            return self._fallback.verify(raw_token) if self._fallback is not None else None
        if len(raw_token) > MAX_TOKEN_LENGTH:
            return None
        try:
            claims = self._verified_claims(raw_token)
        except Unverifiable as exc:
            logger.info("JWT access token refused: %s", exc)
            return None
        scope = claims["scope"]
        scopes = tuple(scope.split())
        audience = claims["aud"]
        return Verification(
            user=TokenUser(pk=claims["sub"], username=str(claims.get("username") or claims["sub"])),
            token=VerifiedToken(
                scopes=scopes,
                # As introspection says it (`unrestricted`): a legacy client's token has no scope.
                unrestricted=scope == "",
                client_id=claims["client_id"],
                subject=claims["sub"],
                expires_at=int(claims["exp"]),
                audience=(audience,) if isinstance(audience, str) else tuple(audience),
                actor=_actor(claims.get("act")),
            ),
        )

    def _signed_claims(self, raw: str, typ: str) -> dict:
        """The claims of a compact JWS of this `typ` signed by a key of the JWKS."""
        if raw.count(".") != 2:
            raise Unverifiable("not a JWS")
        header_part, payload_part, signature_part = raw.split(".")
        header = _json_object(header_part)
        if header.get("typ") != typ:
            raise Unverifiable(f"typ is not {typ}")
        self._check_signature(header, f"{header_part}.{payload_part}".encode("ascii"), signature_part)
        return _json_object(payload_part)

    def _verified_claims(self, raw: str) -> dict:
        claims = self._signed_claims(raw, ACCESS_TOKEN_TYPE)
        now = time.time()
        if claims.get("iss") != self.issuer:
            raise Unverifiable("another issuer")
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or not audience_includes(audiences, self.resource):
            raise Unverifiable("another audience")
        expires, not_before = claims.get("exp"), claims.get("nbf", claims.get("iat"))
        if not isinstance(expires, int | float) or isinstance(expires, bool) or expires + self.leeway <= now:
            raise Unverifiable("expired")
        if not_before is not None and (not isinstance(not_before, int | float) or not_before - self.leeway > now):
            raise Unverifiable("not yet valid")
        for name in ("sub", "client_id", "scope"):
            if not isinstance(claims.get(name), str):
                raise Unverifiable(f"no {name}")
        self._check_status(claims.get("status"), now)
        return claims

    def _check_signature(self, header: dict, signing_input: bytes, signature_part: str) -> None:
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise Unverifiable(f"algorithm {algorithm!r} not allowed")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Unverifiable("no kid")
        key = self._key(kid)
        if key is None:
            raise Unverifiable("unknown kid")
        if key.algorithm_kty != ALGORITHMS[algorithm]:
            raise Unverifiable("the key's type does not match alg")
        signature = _b64decode(signature_part)
        try:
            if algorithm == "ES256":
                if len(signature) != 64:
                    raise Unverifiable("bad signature length")
                der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
                key.public.verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
            else:
                key.public.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        except (InvalidSignature, ValueError, TypeError):
            raise Unverifiable("bad signature") from None

    # --- the keys ----------------------------------------------------------------------------------

    def _key(self, kid: str) -> _Key | None:
        key = self._keys.get(kid)
        if key is not None:
            if time.monotonic() - self._keys_fetched_at >= self.jwks_max_age and self._keys_lock.acquire(False):
                try:  # now and then, so that a key withdrawn from the JWKS stops verifying here
                    self._keys, self._keys_fetched_at = self._fetch_keys(), time.monotonic()
                except AuthorizationServerUnavailable:
                    self._keys_fetched_at = time.monotonic() - self.jwks_max_age + self.refetch_seconds
                finally:
                    self._keys_lock.release()
                return self._keys.get(kid)
            return key
        with self._keys_lock:
            key = self._keys.get(kid)
            if key is not None:
                return key
            fetched = self._keys_fetched_at
            if fetched is not None and time.monotonic() - fetched < self.refetch_seconds:
                return None  # asked very recently: an unknown kid does not make us ask again
            self._keys = self._fetch_keys()
            self._keys_fetched_at = time.monotonic()
            return self._keys.get(kid)

    def _fetch_keys(self) -> dict[str, _Key]:
        body = self._get_json(self.jwks_url, "application/json")
        keys = {}
        for entry in body.get("keys", []) if isinstance(body.get("keys"), list) else []:
            if not isinstance(entry, dict) or entry.get("kty") not in ("EC", "RSA") or not entry.get("kid"):
                continue
            if entry.get("use", "sig") != "sig" or {"d", "p", "q"} & set(entry):
                continue  # never a private key, never an encryption key
            try:
                public = jwk.JWK(**entry).get_op_key("verify")
            except Exception:  # noqa: BLE001 - jwcrypto raises several types for a bad key
                logger.warning("JWKS at %s: a key that cannot be read was skipped", self.jwks_url)
                continue
            if isinstance(public, ec.EllipticCurvePublicKey) and not isinstance(public.curve, ec.SECP256R1):
                continue
            if isinstance(public, rsa.RSAPublicKey) and public.key_size < 2048:
                continue
            keys[str(entry["kid"])] = _Key(entry["kty"], public)
        return keys

    def _get(self, url: str, accept: str) -> requests.Response:
        try:
            response = self.session.get(url, timeout=self.timeout, allow_redirects=False, headers={"Accept": accept})
        except requests.RequestException as exc:
            logger.error("JWT verification: %s reaching %s", type(exc).__name__, url)
            raise AuthorizationServerUnavailable() from None
        if response.status_code != 200:
            logger.error("JWT verification: %s answered %s", url, response.status_code)
            raise AuthorizationServerUnavailable()
        return response

    def _get_json(self, url: str, accept: str) -> dict:
        try:
            body = self._get(url, accept).json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            logger.error("JWT verification: %s answered 200 without a JSON object", url)
            raise AuthorizationServerUnavailable()
        return body

    # --- the status lists --------------------------------------------------------------------------

    def _check_status(self, status, now: float) -> None:
        reference = status.get("status_list") if isinstance(status, dict) else None
        if not isinstance(reference, dict):
            raise Unverifiable("no status list reference")
        index, uri = reference.get("idx"), reference.get("uri")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0 or not isinstance(uri, str):
            raise Unverifiable("a malformed status list reference")
        if _origin(uri) != _origin(self.issuer) or not _fetchable(uri):
            raise Unverifiable("a status list outside the issuer's origin")
        bits = self._status_list(uri, now).bits
        if index // 8 >= len(bits):
            raise Unverifiable("an index beyond its status list")
        if bits[index // 8] >> (index % 8) & 1:
            raise Unverifiable("revoked (status list)")

    def _status_list(self, uri: str, now: float) -> _StatusList:
        held = self._lists.get(uri)
        if held is not None and now - held.fetched_at < held.ttl:
            return held
        with self._locks_lock:
            lock = self._list_locks.setdefault(uri, threading.Lock())
        # One fetch per list at a time; meanwhile others use the last list while it is fresh enough.
        if not lock.acquire(blocking=held is None or now - held.fetched_at >= self.max_staleness):
            return held
        try:
            held = self._lists.get(uri)
            if held is not None and time.time() - held.fetched_at < held.ttl:
                return held
            try:
                fetched = self._fetch_status_list(uri)
            except AuthorizationServerUnavailable:
                if held is not None and time.time() - held.fetched_at < self.max_staleness:
                    return held  # stale but within the bound: revocations may wait that long
                raise
            self._lists[uri] = fetched
            return fetched
        finally:
            lock.release()

    def _fetch_status_list(self, uri: str) -> _StatusList:
        raw = self._get(uri, "application/statuslist+jwt").text.strip()
        try:
            claims = self._signed_claims(raw, STATUS_LIST_TYPE)
            if claims.get("sub") != uri:
                raise Unverifiable("a list for another uri")
            expires = claims.get("exp")
            if isinstance(expires, int | float) and expires + self.leeway <= time.time():
                raise Unverifiable("an expired list")
            status_list = claims.get("status_list")
            if not isinstance(status_list, dict) or status_list.get("bits") != 1:
                raise Unverifiable("not a 1-bit status list")
            bits = zlib.decompress(_b64decode(str(status_list.get("lst", ""))))
        except (Unverifiable, zlib.error, ValueError) as exc:
            logger.error("JWT verification: the status list at %s is unusable (%s)", uri, exc)
            raise AuthorizationServerUnavailable() from None
        ttl = claims.get("ttl", 0)
        ttl = float(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl > 0 else 0.0
        return _StatusList(bits=bits, fetched_at=time.time(), ttl=min(ttl, self.max_staleness))


def _actor(act) -> str:
    """RFC 8693 §4.1: the current actor of an exchanged token (`act.sub`), else empty."""
    return act["sub"] if isinstance(act, dict) and isinstance(act.get("sub"), str) else ""
