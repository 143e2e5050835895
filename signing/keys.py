"""Signing keys: made, rotated, retired and published here; used through `signing_key_current`.

Keys are ES256 (P-256) or RS256 (RSA 2048), made with jwcrypto (the JOSE library
django-oauth-toolkit already depends on). The private part is stored only as a compact JWE
(A256KW + A256GCM) under a key-encryption key derived from OAUTH_SIGNING_KEY_ENCRYPTION_KEY (the
environment's, never the database's): a dump of the database holds no usable private key.

Rotation with overlap (`signing_key_rotate`): the new key is published in the JWKS at once and
signs only OAUTH_SIGNING_KEY_PUBLISH_AHEAD seconds later, so every verifier that refreshes its JWKS
within that time (the JWKS is cacheable for less) already knows it; the old key signs until then
and stays published until the last token it could have signed has expired.
"""

import base64
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Q
from django.db.models.signals import post_save
from django.utils import timezone
from jwcrypto import jwe, jwk
from oauth2_provider.settings import oauth2_settings

from oauthclients.exceptions import ApplicationError
from signing.models import SigningKey, SigningKeyAlgorithm

logger = logging.getLogger(__name__)

KEY_WRAP = {"alg": "A256KW", "enc": "A256GCM"}
MIN_ENCRYPTION_KEY_LENGTH = 32


class SigningKeyNotFound(ApplicationError):
    pass


class SigningKeyUnusable(ImproperlyConfigured):
    """A stored key's private part cannot be decrypted: OAUTH_SIGNING_KEY_ENCRYPTION_KEY is unset or
    is not the one the key was made under. The deployment's fault, not the request's: whatever
    needed a signature answers 503 with Retry-After (plumbing.errors.service_unavailable), and
    `check --deploy --database default` reports it before the process serves (config.E005)."""


class SealedSecretUnusable(ImproperlyConfigured):
    """A `secret_seal`ed value does not open: OAUTH_SIGNING_KEY_ENCRYPTION_KEY is unset or is not the
    one it was sealed under (or the stored value is not a sealed one). The deployment's fault, as
    for SigningKeyUnusable; the message names the setting, never the secret."""


def _encryption_key() -> jwk.JWK:
    """The key-encryption key: SHA-256 of OAUTH_SIGNING_KEY_ENCRYPTION_KEY (at least 32 characters)."""
    secret = getattr(settings, "OAUTH_SIGNING_KEY_ENCRYPTION_KEY", "") or ""
    if len(secret) < MIN_ENCRYPTION_KEY_LENGTH:
        raise ImproperlyConfigured(
            "OAUTH_SIGNING_KEY_ENCRYPTION_KEY must be set to a random string of at least "
            f"{MIN_ENCRYPTION_KEY_LENGTH} characters (python -c 'import secrets; print(secrets.token_urlsafe(32))')."
        )
    raw = hashlib.sha256(secret.encode("utf-8")).digest()
    return jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii"))


def _generate(algorithm: str) -> jwk.JWK:
    if algorithm == SigningKeyAlgorithm.ES256:
        return jwk.JWK.generate(kty="EC", crv="P-256")
    if algorithm == SigningKeyAlgorithm.RS256:
        return jwk.JWK.generate(kty="RSA", size=2048)
    raise ValueError(f"Unknown signing algorithm {algorithm!r}: ES256 or RS256.")


def _public(key: jwk.JWK, *, kid: str, algorithm: str) -> dict:
    return {**key.export_public(as_dict=True), "kid": kid, "alg": algorithm, "use": "sig"}


def private_key(key: SigningKey) -> jwk.JWK:
    """The private JWK, decrypted (only in memory, to sign). SigningKeyUnusable when the
    encryption key is missing or does not open it."""
    try:
        encryption_key = _encryption_key()
    except ImproperlyConfigured as exc:
        raise SigningKeyUnusable(str(exc)) from None
    envelope = jwe.JWE()
    try:
        envelope.deserialize(key.private_jwe, key=encryption_key)
    except jwe.InvalidJWEData:
        # Names the key and the setting, never any part of either.
        logger.error("Signing key %s cannot be decrypted with OAUTH_SIGNING_KEY_ENCRYPTION_KEY", key.kid)
        raise SigningKeyUnusable(
            f"OAUTH_SIGNING_KEY_ENCRYPTION_KEY does not decrypt the {key.algorithm} signing key {key.kid}: it is "
            "not the value the key was made under."
        ) from None
    return jwk.JWK.from_json(envelope.payload.decode("utf-8"))


def signing_keys_problems() -> list[str]:
    """Why this server cannot sign now, one sentence each naming the setting to fix (none: it can):
    every key that signs now or is published to sign later is decrypted once. The one answer for
    `check --deploy --database default` (config.checks) and for a readiness probe."""
    now = timezone.now()
    problems = []
    for key in SigningKey.objects.filter(Q(retired_at__isnull=True) | Q(retired_at__gt=now)).order_by("id"):
        try:
            private_key(key)
        except SigningKeyUnusable as exc:
            if str(exc) not in problems:  # an unset encryption key: one sentence, not one per key
                problems.append(str(exc))
    return problems


def published_lifetime() -> timedelta:
    """How long a retired key stays published: the longest a token it signed can live."""
    return timedelta(seconds=max(oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS, oauth2_settings.ID_TOKEN_EXPIRE_SECONDS))


@transaction.atomic
def signing_key_create(*, algorithm: str, signs_from=None) -> SigningKey:
    """A new key, published now; it signs from `signs_from` (default: now)."""
    generated = _generate(algorithm)
    kid = generated.thumbprint()  # RFC 7638: stable, and says nothing secret
    envelope = jwe.JWE(generated.export_private().encode("utf-8"), protected=json.dumps(KEY_WRAP))
    envelope.add_recipient(_encryption_key())
    now = timezone.now()
    return SigningKey.objects.create(
        kid=kid,
        algorithm=algorithm,
        public_jwk=_public(generated, kid=kid, algorithm=algorithm),
        private_jwe=envelope.serialize(compact=True),
        created=now,
        signs_from=signs_from or now,
    )


@transaction.atomic
def signing_key_rotate(*, algorithm: str) -> SigningKey:
    """A new key published now that takes over signing after OAUTH_SIGNING_KEY_PUBLISH_AHEAD; the
    keys of that algorithm signing until then retire at that moment (and stay published)."""
    now = timezone.now()
    takes_over = now + timedelta(seconds=settings.OAUTH_SIGNING_KEY_PUBLISH_AHEAD)
    current = list(
        SigningKey.objects.select_for_update().filter(
            Q(retired_at__isnull=True) | Q(retired_at__gt=takes_over), algorithm=algorithm
        )
    )
    new = signing_key_create(algorithm=algorithm, signs_from=takes_over if current else now)
    SigningKey.objects.filter(pk__in=[key.pk for key in current]).update(retired_at=new.signs_from)
    return new


@transaction.atomic
def signing_key_retire(*, kid: str) -> SigningKey:
    """Stop signing with this key now; it stays published until its last token has expired."""
    key = SigningKey.objects.select_for_update().filter(kid=kid).first()
    if key is None:
        raise SigningKeyNotFound(f"No signing key has kid {kid!r}.")
    now = timezone.now()
    if key.retired_at is None or key.retired_at > now:
        key.retired_at = now
        key.save(update_fields=["retired_at"])
    return key


def signing_key_current(algorithm: str) -> SigningKey | None:
    """The key that signs now with this algorithm: the newest one past `signs_from`, not retired."""
    now = timezone.now()
    return (
        SigningKey.objects.filter(algorithm=algorithm, signs_from__lte=now)
        .filter(Q(retired_at__isnull=True) | Q(retired_at__gt=now))
        .order_by("-signs_from", "-id")
        .first()
    )


def signing_keys_published() -> list[SigningKey]:
    """Every key a verifier may meet now: made, and not retired longer ago than a token lives."""
    cutoff = timezone.now() - published_lifetime()
    return list(SigningKey.objects.filter(Q(retired_at__isnull=True) | Q(retired_at__gt=cutoff)).order_by("id"))


def jwks_document() -> dict:
    """RFC 7517 §5: the public keys, nothing else."""
    return {"keys": [key.public_jwk for key in signing_keys_published()]}


@dataclass(frozen=True)
class KeyState:
    kid: str
    algorithm: str
    state: str  # "signing", "published" (not yet or no longer signing), "expired" (no longer published)
    created: str
    signs_from: str
    retired_at: str | None

    @classmethod
    def of(cls, key: SigningKey) -> "KeyState":
        now = timezone.now()
        if key.retired_at is not None and key.retired_at + published_lifetime() <= now:
            state = "expired"
        elif key.signs_from <= now and (key.retired_at is None or key.retired_at > now):
            state = "signing"
        else:
            state = "published"
        return cls(
            kid=key.kid,
            algorithm=key.algorithm,
            state=state,
            created=key.created.isoformat(),
            signs_from=key.signs_from.isoformat(),
            retired_at=key.retired_at.isoformat() if key.retired_at else None,
        )


# --- signing in the hot path: the current key, decrypted, kept a short while per process ---------

SIGNER_SECONDS = 5
_signers: dict[str, tuple[float, SigningKey]] = {}
_op_keys: dict[str, object] = {}  # kid -> its private key as `cryptography` signs with it


def signer_current(algorithm: str) -> tuple[SigningKey, object] | None:
    """The current key of `algorithm` and its private key as `cryptography` signs with it: looked
    up at most every SIGNER_SECONDS (and at once in this process when a key changes), decrypted
    once per key and process. A rotated-in key takes over here within that time; the key it
    replaces stays published meanwhile (signing_key_rotate)."""
    now = time.monotonic()
    held = _signers.get(algorithm)
    if held is None or held[0] <= now:
        key = signing_key_current(algorithm)
        if key is None:
            _signers.pop(algorithm, None)
            return None
        until = now + SIGNER_SECONDS
        if key.retired_at is not None:
            until = min(until, now + max(0.0, (key.retired_at - timezone.now()).total_seconds()))
        held = _signers[algorithm] = (until, key)
    key = held[1]
    op_key = _op_keys.get(key.kid)
    if op_key is None:
        op_key = _op_keys[key.kid] = private_key(key).get_op_key("sign")
    return key, op_key


def signers_forget(**kwargs) -> None:
    _signers.clear()


post_save.connect(signers_forget, sender=SigningKey, dispatch_uid="signing.keys.signers_forget")


# --- other secrets at rest under the same key-encryption key ---------------------------------------
# Second-factor secrets (allauth's MFA adapter, accounts.adapter) and upstream identity providers'
# client secrets (accounts.models.IdentityProvider) are sealed like the signing keys' private parts:
# a dump of the database holds none of them in a usable form.


def secret_seal(plaintext: str) -> str:
    """A compact JWE (A256KW + A256GCM) of `plaintext` under the key-encryption key."""
    envelope = jwe.JWE(plaintext.encode("utf-8"), protected=json.dumps(KEY_WRAP))
    envelope.add_recipient(_encryption_key())
    return envelope.serialize(compact=True)


def secret_open(sealed: str) -> str:
    """The plaintext of a `secret_seal`ed value (only in memory, to use it). SealedSecretUnusable
    when the encryption key is missing or does not open it."""
    try:
        encryption_key = _encryption_key()
    except ImproperlyConfigured as exc:
        raise SealedSecretUnusable(str(exc)) from None
    envelope = jwe.JWE()
    try:
        envelope.deserialize(sealed, key=encryption_key)
    except (jwe.InvalidJWEData, ValueError):
        raise SealedSecretUnusable(
            "OAUTH_SIGNING_KEY_ENCRYPTION_KEY does not open the sealed secret: it is not the value it was sealed under."
        ) from None
    return envelope.payload.decode("utf-8")
