"""A confidential client's secrets: made (shown once, kept as a digest), at most MAX_ACTIVE_SECRETS
at a time, revoked."""

import secrets
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from oauthclients.exceptions import ClientKindError, LastSecretError, SecretLimitReached, SecretNotFound
from oauthclients.models import AuditAction, ClientKind, ClientSecret, OAuthClient, digest
from oauthclients.services.fields import _audit, _lock

MAX_ACTIVE_SECRETS = 2
SECRET_PREFIX = "cs_"
SECRET_HINT_LENGTH = len(SECRET_PREFIX) + 4


@dataclass(frozen=True)
class IssuedSecret:
    """A freshly made secret: `plaintext` exists only here, to be shown once and dropped."""

    secret: ClientSecret
    # Kept out of repr() so that a logged object or a traceback cannot show the secret (STYLE §8).
    plaintext: str = dataclass_field(repr=False)


def _new_secret(*, client: OAuthClient, actor) -> IssuedSecret:
    # 256 bits from `secrets`; stored as a SHA-256 digest plus a short non-secret hint.
    plaintext = SECRET_PREFIX + secrets.token_urlsafe(32)
    secret = ClientSecret.objects.create(
        client=client,
        digest=digest(plaintext),
        hint=plaintext[:SECRET_HINT_LENGTH],
        created_by=actor if getattr(actor, "pk", None) else None,
    )
    _audit(client=client, actor=actor, action=AuditAction.SECRET_CREATED, secret_id=secret.pk, hint=secret.hint)
    return IssuedSecret(secret=secret, plaintext=plaintext)


@transaction.atomic
def client_secret_create(*, client: OAuthClient, actor) -> IssuedSecret:
    """Add a secret while fewer than two are active (spec §3, §5.7 step a)."""
    client = _lock(client)
    if client.client_type == ClientKind.PUBLIC:
        raise ClientKindError(gettext("A public client has no secrets; it authenticates with PKCE."))
    active = client.secrets.filter(revoked_at__isnull=True).count()
    if active >= MAX_ACTIVE_SECRETS:
        raise SecretLimitReached(
            gettext("This client already has %(count)s active secrets. Revoke one before creating another.")
            % {"count": MAX_ACTIVE_SECRETS}
        )
    return _new_secret(client=client, actor=actor)


@transaction.atomic
def client_secret_revoke(*, client: OAuthClient, secret_id: int, actor) -> ClientSecret:
    """Revoke a secret at once, unless it is the last active one (spec §5.7 step c)."""
    client = _lock(client)
    try:
        secret = client.secrets.get(pk=secret_id, revoked_at__isnull=True)
    except (ClientSecret.DoesNotExist, ValueError, TypeError):
        raise SecretNotFound(gettext("This client has no active secret with id %(id)s.") % {"id": secret_id}) from None
    if client.secrets.filter(revoked_at__isnull=True).count() <= 1:
        raise LastSecretError(
            gettext("This is the client's last active secret and cannot be revoked. Create a new secret first.")
        )
    secret.revoked_at = timezone.now()
    secret.save(update_fields=["revoked_at"])
    _audit(client=client, actor=actor, action=AuditAction.SECRET_REVOKED, secret_id=secret.pk, hint=secret.hint)
    return secret
