"""JWT access tokens (RFC 9068) for the resource servers registered with `token_format = jwt`.

A token whose audience (RFC 8707 `resource`) names only such resource servers is a JWT signed by
the current key of OAUTH_JWT_ACCESS_TOKEN_ALGORITHM (ES256 by default; signing.keys):

    header  {"alg", "kid", "typ": "at+jwt"}
    claims  iss, sub (the user's pk, as introspection says it), aud (a string, or a list when
            several), client_id, scope, jti (192 random bits), iat, exp, auth_time,
            status.status_list {idx, uri} (signing.statuslist),
            act {sub, act?} for a token obtained by exchange (RFC 8693 §4.1, oauthflows.token.exchange)

Anything else — no audience, this server's own API, an opaque resource server among the audience —
stays an opaque token. The database keeps the row as for an opaque token (the digest of the whole
JWT, which holds the jti; never the JWT), so introspection, revocation, connected apps, family
revocation and rejection work on JWTs unchanged; the status list carries those to the resource
servers that do not ask.

Which resource URIs are JWT-format is read once per JWT_FORMATS_SECONDS per process (and at once
in this process when a client is saved): a resource server switched to JWT gets JWTs everywhere
within that time.
"""

import secrets
import threading
import time

from django.conf import settings
from django.db.models.signals import post_save

from oauthclients.models import ClientKind, OAuthClient, TokenFormat
from oauthclients.policy import client_serves_q
from scopes.bearer import MAX_TOKEN_LENGTH
from signing.keys import signer_current
from signing.statuslist import allocator, jws_sign, jwt_signing_algorithm, list_uri

JWT_FORMATS_SECONDS = 30
ACCESS_TOKEN_TYPE = "at+jwt"

_formats_lock = threading.Lock()
_formats: tuple[float, frozenset[str]] | None = None


def jwt_resource_uris() -> frozenset[str]:
    """The resource URIs whose tokens are JWTs (approved, live resource servers)."""
    global _formats
    held = _formats
    now = time.monotonic()
    if held is not None and held[0] > now:
        return held[1]
    with _formats_lock:
        uris = frozenset(
            OAuthClient.objects.filter(
                client_serves_q(), client_type=ClientKind.RESOURCE_SERVER, token_format=TokenFormat.JWT
            )
            .exclude(resource_uri="")
            .values_list("resource_uri", flat=True)
        )
        _formats = (now + JWT_FORMATS_SECONDS, uris)
        return uris


def formats_forget(**kwargs) -> None:
    global _formats
    _formats = None


post_save.connect(formats_forget, sender=OAuthClient, dispatch_uid="signing.jwtokens.formats_forget")


def issues_jwt(audience: list[str]) -> bool:
    if not audience:
        return False
    jwt_uris = jwt_resource_uris()
    return bool(jwt_uris) and all(uri in jwt_uris for uri in audience)


class NoSigningKey(Exception):
    pass


class TokenTooLong(Exception):
    """The JWT would be longer than any door takes (scopes.bearer.MAX_TOKEN_LENGTH): not issued."""


def access_token_jwt(
    *, user_pk, client_id: str, scope: str, audience: list[str], auth_time: int, lifetime: int, act: dict | None = None
):
    """(the signed JWT, (status list, index)) for a new access token; `act` for an exchanged one (RFC 8693 §4.1)."""
    signer = signer_current(jwt_signing_algorithm())
    if signer is None:
        raise NoSigningKey(jwt_signing_algorithm())
    key, op_key = signer
    number, index = allocator.take()
    issued = int(time.time())
    claims = {
        "iss": settings.OAUTH_ISSUER,
        "sub": str(user_pk),
        "aud": audience[0] if len(audience) == 1 else list(audience),
        "client_id": client_id,
        "scope": scope,
        "jti": secrets.token_urlsafe(24),
        "iat": issued,
        "exp": issued + lifetime,
        "auth_time": auth_time,
        "status": {"status_list": {"idx": index, "uri": list_uri(number)}},
    } | ({"act": act} if act else {})
    token = jws_sign(claims, typ=ACCESS_TOKEN_TYPE, key=key, op_key=op_key)
    if len(token) > MAX_TOKEN_LENGTH:
        # Many long resource URIs, or a long chain of exchanges: a token no verifier, introspection
        # or revocation would take. Its status index stays unused (a bit never set).
        raise TokenTooLong(len(token))
    return token, (number, index)
