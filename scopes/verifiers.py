"""Token verifiers: how a resource server learns what a bearer token grants.

The scope rules, error bodies and challenges (scopes.authentication, scopes.permissions) are the
same whichever verifier runs. `OAUTH_TOKEN_VERIFIER` names the class:

- `tokens.verifier.LocalTokenVerifier` — in the authorization server's own process: one
  indexed query on its token table;
- `scopes.introspection.IntrospectionVerifier` — in any other service: asks the authorization
  server's introspection endpoint (RFC 7662) as a resource server, with an optional cache.
"""

from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string
from rest_framework import exceptions

from scopes.resource import resource_uri


@dataclass(frozen=True)
class VerifiedToken:
    """An access token the verifier accepted: `request.auth` on a scoped view."""

    scopes: tuple[str, ...]  # as granted; ORG_ grants are expanded only when checked
    unrestricted: bool  # a legacy client's token: no scope restriction (spec §2.1)
    client_id: str
    subject: str  # the user's stable identifier (RFC 7662 `sub`)
    expires_at: int  # seconds since the epoch
    # RFC 8707 / RFC 7662 `aud`: the resources the token is bound to; empty: no audience.
    audience: tuple[str, ...] = ()
    # RFC 8693 §4.1 `act.sub`: the service that obtained this token by exchange, for the user
    # (the authorization server's oauthflows.token.exchange); empty for a token the app got itself.
    actor: str = ""


@dataclass(frozen=True)
class TokenUser:
    """The token's user as a service without the user table knows it: `request.user` there."""

    pk: str  # the `sub` claim
    username: str
    is_authenticated = True
    is_anonymous = False
    is_active = True

    def get_username(self) -> str:
        return self.username

    def __str__(self):
        return self.username


@dataclass(frozen=True)
class Verification:
    user: object  # the user model instance in process, a TokenUser elsewhere
    token: VerifiedToken


class AuthorizationServerUnavailable(exceptions.APIException):
    """503: the token could not be checked, so the request is neither allowed nor refused as 401."""

    status_code = 503
    default_detail = "The access token cannot be verified right now: the authorization server is unavailable."
    default_code = "service_unavailable"
    retry_after = 5


class TokenVerifier:
    """Turns a presented bearer value into a Verification, or None when the token is not active."""

    def verify(self, raw_token: str) -> Verification | None:
        raise NotImplementedError


def audience_includes(audience, resource: str | None) -> bool:
    """Whether `resource` is one of `audience` (RFC 8707 resource URIs, a token's `aud`): the one
    comparison of an audience, for every verifier here and the authorization server's
    introspection. Exact, except that a trailing `/` makes no difference (the settings read
    OAUTH_RESOURCE_URI without one); never a prefix, never case-folded."""
    if not resource:
        return False
    own = resource.rstrip("/")
    return any(isinstance(entry, str) and entry.rstrip("/") == own for entry in audience)


def audience_accepted(audience: tuple[str, ...]) -> bool:
    """Whether this service may accept a token with this audience (RFC 8707, RFC 9068 §4).

    A bound token only where `OAUTH_RESOURCE_URI` is among its audience; a token without audience
    everywhere, unless `OAUTH_REQUIRE_AUDIENCE` is set.
    """
    if not audience:
        return not getattr(settings, "OAUTH_REQUIRE_AUDIENCE", False)
    return audience_includes(audience, resource_uri())


@cache
def get_verifier() -> TokenVerifier:
    """The verifier `OAUTH_TOKEN_VERIFIER` names, made once per process."""
    path = getattr(settings, "OAUTH_TOKEN_VERIFIER", None)
    if not path:
        raise ImproperlyConfigured(
            "OAUTH_TOKEN_VERIFIER is not set: name tokens.verifier.LocalTokenVerifier in the "
            "authorization server, or scopes.introspection.IntrospectionVerifier in another service."
        )
    return import_string(path)()


@receiver(setting_changed)
def _forget_verifier(*, setting, **kwargs):
    if setting.startswith("OAUTH_"):
        get_verifier.cache_clear()
