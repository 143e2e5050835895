"""Signing keys and token status lists: this app's models (signing.keys, signing.statuslist).

They were the registry's until they moved here; their tables kept the registry's names
(`db_table`), so that the move copied no row (signing/migrations/0001_keys_and_status_lists.py).
"""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from oauthclients.algorithms import SIGNING_ALGORITHMS

# The keys' algorithms: SIGNING_ALGORITHMS, each with the key it makes (signing.keys).
_KEY_LABELS = {"ES256": "ES256 (ECDSA P-256)", "RS256": "RS256 (RSA 2048)"}
SigningKeyAlgorithm = models.TextChoices(
    "SigningKeyAlgorithm", [(alg, (alg, _KEY_LABELS[alg])) for alg in SIGNING_ALGORITHMS]
)


class SigningKey(models.Model):
    """A key this server signs with (JWT access tokens, ID tokens, status lists): signing.keys.

    The private part is stored only as a JWE (A256KW + A256GCM) under OAUTH_SIGNING_KEY_ENCRYPTION_KEY,
    never in plain text; the public part is published in the JWKS from `created` until the last
    token it signed has expired. It signs from `signs_from` (later than `created` when rotated in,
    so that verifiers have fetched it first) until `retired_at`.
    """

    kid = models.CharField(max_length=64, unique=True, editable=False)
    algorithm = models.CharField(max_length=8, choices=SigningKeyAlgorithm.choices)
    public_jwk = models.JSONField(editable=False)
    private_jwe = models.TextField(editable=False)
    created = models.DateTimeField(default=timezone.now, editable=False)
    signs_from = models.DateTimeField()
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = _("signing keys")
        db_table = "oauthclients_signingkey"
        ordering = ["-signs_from", "-id"]
        verbose_name = _("signing key")

    def __str__(self):
        return f"{self.algorithm} key {self.kid}"


class StatusList(models.Model):
    """A token status list (draft-ietf-oauth-status-list): one bit per JWT access token, 1 = revoked.

    Global index g of a JWT is list g // size, bit g % size; lists are made as indices reach them
    and deleted once every token they hold has expired (signing.statuslist). The set bits
    are the list's `StatusRevocation` rows: a revocation is an INSERT, never a rewrite of the list.
    """

    number = models.PositiveIntegerField(primary_key=True)
    size = models.PositiveIntegerField()
    last_issued = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = _("token status lists")
        db_table = "oauthclients_statuslist"
        verbose_name = _("token status list")

    def __str__(self):
        return f"Token status list {self.number}"


class StatusRevocation(models.Model):
    """One set bit: the JWT access token at `index` of list `status_list` is revoked. Inserted by the
    database's triggers only (signing.statuslist.status_triggers_install)."""

    status_list = models.PositiveIntegerField()
    index = models.PositiveIntegerField()

    class Meta:
        db_table = "oauthclients_statusrevocation"
        constraints = [models.UniqueConstraint(fields=["status_list", "index"], name="status_revocation_once")]

    def __str__(self):
        return f"Revoked: list {self.status_list}, index {self.index}"


class StatusCounter(models.Model):
    """The next global status index to hand out, in blocks (signing.statuslist; a sequence on
    PostgreSQL does the same without this row)."""

    next_index = models.BigIntegerField(default=0)

    class Meta:
        db_table = "oauthclients_statuscounter"

    def __str__(self):
        return f"Next status index {self.next_index}"
