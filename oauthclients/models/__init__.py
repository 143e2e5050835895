"""The registry's models and django-oauth-toolkit's swapped ones, by the concern that owns them.

- `clients`: the registry's clients (DOT's Application swapped for OAuthClient), their secrets and
  web origins, the exchange targets an administrator allows (RFC 8693);
- `audit`: the registry's audit trail;
- `tokens`: DOT's token models (codes, access, refresh and ID tokens), whose rules are the token
  lifecycle's (`tokens`) but whose tables and migrations stay here: DOT's applied migrations name
  this app through OAUTH2_PROVIDER_*_MODEL (docs/architecture.md, "Why DOT's models stay").

Every DOT model is swapped for one of ours from the first migration, so the flows store digests
and see our review state through DOT's own hooks (`is_usable`, the validator) with no rewrite.
`from oauthclients.models import X` names any of them.
"""

from oauthclients.models.audit import AuditAction, ClientAuditEvent
from oauthclients.models.clients import (
    APP_KIND_CHOICES,
    APP_KINDS,
    MAX_ORIGIN_LENGTH,
    ClientKind,
    ClientOrigin,
    ClientSecret,
    ExchangeTarget,
    IdTokenAlgorithm,
    OAuthClient,
    ShownClient,
    TokenFormat,
    digest,
)
from oauthclients.models.tokens import AccessToken, AccessTokenQuerySet, Grant, IDToken, RefreshToken
from oauthclients.policy import AUTHORIZABLE_STATUSES, ClientStatus

__all__ = [
    "APP_KINDS",
    "APP_KIND_CHOICES",
    "AUTHORIZABLE_STATUSES",
    "MAX_ORIGIN_LENGTH",
    "AccessToken",
    "AccessTokenQuerySet",
    "AuditAction",
    "ClientAuditEvent",
    "ClientKind",
    "ClientOrigin",
    "ClientSecret",
    "ClientStatus",
    "ExchangeTarget",
    "Grant",
    "IDToken",
    "IdTokenAlgorithm",
    "OAuthClient",
    "RefreshToken",
    "ShownClient",
    "TokenFormat",
    "digest",
]
