"""RFC 8693 token exchange, for resource servers that call other resource servers for a user.

A service that received a user's token (bound to it, RFC 8707) never passes that token on (MCP
security best practices, "token passthrough"; SECURITY.md, "One service acting for a user at
another"): it trades it here for one bound to the downstream service. An oauthlib grant type,
declared in oauthflows.grants (TOKEN_EXCHANGE) and dispatched to by oauthflows.token.oauth2.Server,
so that the token endpoint, client authentication, the token generator (opaque or JWT), the one
writer of token rows (through oauthflows.token.single), the answer and the error answers are the
ones every other grant uses.

The rules, each refused with its RFC 6749 §5.2 / RFC 8693 §2.2.2 error:

- the caller authenticates with its own secret and is a resource server (`unauthorized_client`
  for an app; `unauthorized_client` too for a resource server an administrator allowed no target);
- `subject_token` is a live access token bound to the caller (`invalid_grant` otherwise), of type
  `urn:ietf:params:oauth:token-type:access_token`, and an access token is what is asked for
  (`invalid_request`); no `actor_token`: the caller's authentication names the actor;
- `resource` / `audience` name exactly one resource server that an administrator allowed for this
  caller (oauthclients.exchangetargets; `invalid_target`);
- `scope` is within the subject token's (`invalid_scope`; never wider), and within the unverified
  ceiling for a self-registered app (oauthclients.tier);
- the new token keeps the app's client_id and its subject's lineage: the user's grant family or the
  organization's assertion, and the subject itself for the audit (tokens.services), so that
  revoking the grant, rejecting the app, deactivating the user, revoking the family or denying the
  assertions ends it, status list bits included; it carries
  `act: {"sub": <caller's client_id>}` (RFC 8693 §4.1; nested for a chain), lives no longer than
  the subject token, and comes with no refresh token.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.contrib.auth import get_user_model
from django.db import connections
from django.utils import timezone
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749 import errors

from oauthclients.exchangetargets import exchange_target_get
from oauthclients.models import AccessToken, ClientKind, ClientStatus, ExchangeTarget, OAuthClient, RefreshToken, digest
from oauthclients.policy import Door, client_may_act
from oauthclients.tier import ceiling_refusal
from oauthflows.grants import ACCESS_TOKEN_TYPE, ExchangeState
from oauthflows.token.single import SingleTokenGrant
from plumbing.compiled import quoted_columns
from plumbing.handwritten import handwritten_alias, instance, json_value, sql_twin
from scopes.bearer import MAX_TOKEN_LENGTH
from scopes.catalog import SCOPE_NAMES
from tokens.liveness import token_alive
from tokens.services import Lineage

SUBJECT_REFUSED = (
    "The subject_token is not a live access token bound to this resource server (unknown, expired, revoked, "
    "or issued for another audience)."
)


def _param(request, name: str):
    value = request._params.get(name)
    return value if isinstance(value, str) else None


def _target_uri(request) -> str:
    """The one downstream resource (RFC 8693 §2.1: `resource` and `audience` may each repeat)."""
    named = [value for key, value in (request.decoded_body or []) if key in ("resource", "audience")]
    if not named:
        raise errors.InvalidRequestError(
            description="Name the downstream resource server with resource (its resource URI).", request=request
        )
    if len(set(named)) > 1:
        raise errors.CustomOAuth2Error(
            error="invalid_target",
            description="A token exchange names one downstream resource server; this request names several.",
            request=request,
        )
    return named[0]


def _subject_row(raw: str | None) -> AccessToken | None:
    if not raw or len(raw) > MAX_TOKEN_LENGTH:
        return None
    return (
        AccessToken.objects.filter(token_checksum=digest(raw))
        .select_related("application", "user")
        .only(
            "expires",
            "scope",
            "resource",
            "act",
            "token_family",
            "assertion_issuer",
            "user_id",
            "application_id",
            "user__is_active",
            "application__client_id",
            "application__status",
            "application__deleted_at",
            "application__user_id",
        )
        .first()
    )


def _subject_check(subject: AccessToken | None, caller, request) -> AccessToken:
    if (
        not token_alive(subject)  # tokens.liveness
        # RFC 8707: only a token bound to the caller is the caller's to exchange; an unbound one
        # (no audience) was meant for nobody in particular, and is refused too.
        or caller.resource_uri not in (subject.resource or [])
    ):
        raise errors.InvalidGrantError(description=SUBJECT_REFUSED, request=request)
    return subject


def _scopes(request, subject: AccessToken) -> list[str]:
    held = subject.scope.split()
    if not held:
        # A legacy app's unrestricted token: "never wider" has nothing to be measured against.
        raise errors.InvalidScopeError(
            description="A token without scopes (a legacy app's full access) cannot be exchanged.", request=request
        )
    asked = _param(request, "scope")
    if asked is None:
        return held
    wanted = list(dict.fromkeys(asked.split()))
    wider = [name for name in wanted if name not in held]
    if not wanted or wider:
        raise errors.InvalidScopeError(
            description="The scope must be within the subject token's"
            + (
                f"; it does not hold {', '.join(name for name in wider if name in SCOPE_NAMES) or 'those'}."
                if wider
                else "."
            ),
            request=request,
        )
    return wanted


def _family_and_auth_time(subject: AccessToken):
    """The subject's refresh token's family and the user's login time for it (a JWT's auth_time): one read."""
    row = RefreshToken.objects.filter(access_token_id=subject.pk).values_list("token_family", "auth_time").first()
    return row or (None, None)


@dataclass(frozen=True)
class Looked:
    """What one exchange reads: the target (or None), whether the caller has any target, the
    subject token (or None) with its app and user, its grant family and the login time."""

    target: OAuthClient | None
    any_target: bool
    subject: AccessToken | None
    family: uuid.UUID | None
    auth_time: datetime | None


@sql_twin(
    mirrors="oauthclients.exchangetargets.exchange_target_get",
    decides="the exchange's target: an approved, undeleted resource server this caller may exchange toward",
)
@cache
def _lookup_sql(alias: str) -> str:
    """The target, the caller's having any target, the subject with its app, user and refresh
    token: one statement, built once per database (a row always comes back: LEFT JOINs from one)."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    columns = ("id", "client_id", "name", "resource_uri", "client_type", "status", "deleted_at", "user")
    c = quoted_columns(connection, OAuthClient, *columns)
    x = quoted_columns(connection, ExchangeTarget, "client", "target")
    a = quoted_columns(
        connection,
        AccessToken,
        "id",
        "token_checksum",
        "expires",
        "scope",
        "resource",
        "act",
        "token_family",
        "assertion_issuer",
        "user",
        "application",
    )
    user_model = get_user_model()
    u = quoted_columns(connection, user_model, "id", "is_active")
    r = quoted_columns(connection, RefreshToken, "access_token", "token_family", "auth_time")
    clients, targets = quote(OAuthClient._meta.db_table), quote(ExchangeTarget._meta.db_table)
    tokens, users, refresh = (
        quote(AccessToken._meta.db_table),
        quote(user_model._meta.db_table),
        quote(RefreshToken._meta.db_table),
    )
    return (
        f"SELECT t.{c['id']}, t.{c['client_id']}, t.{c['name']}, t.{c['resource_uri']}, "
        f"EXISTS (SELECT 1 FROM {targets} y WHERE y.{x['client']} = %(caller)s), "
        f"a.{a['id']}, a.{a['expires']}, a.{a['scope']}, a.{a['resource']}, a.{a['act']}, a.{a['token_family']}, "
        f"a.{a['assertion_issuer']}, a.{a['user']}, a.{a['application']}, u.{u['is_active']}, "
        f"app.{c['client_id']}, app.{c['status']}, app.{c['deleted_at']}, app.{c['user']}, "
        f"r.{r['token_family']}, r.{r['auth_time']} "
        f"FROM (SELECT 1) one "
        f"LEFT JOIN {clients} t ON t.{c['id']} = (SELECT z.{c['id']} FROM {targets} y "
        f"JOIN {clients} z ON z.{c['id']} = y.{x['target']} WHERE y.{x['client']} = %(caller)s "
        f"AND z.{c['resource_uri']} = %(uri)s AND z.{c['client_type']} = %(kind)s "
        # oauthclients.policy.client_serves_q: approved, not deleted (this twin's ORM function reads it).
        f"AND z.{c['status']} = '{ClientStatus.APPROVED.value}' "
        f"AND z.{c['deleted_at']} IS NULL LIMIT 1) "
        f"LEFT JOIN {tokens} a ON a.{a['token_checksum']} = %(checksum)s "
        f"LEFT JOIN {clients} app ON app.{c['id']} = a.{a['application']} "
        f"LEFT JOIN {users} u ON u.{u['id']} = a.{a['user']} "
        f"LEFT JOIN {refresh} r ON r.{r['access_token']} = a.{a['id']}"
    )


def _look_up_in_one_statement(alias: str, *, caller: OAuthClient, uri: str, raw: str | None) -> Looked:
    params = {
        "caller": caller.pk,
        "uri": uri,
        "kind": ClientKind.RESOURCE_SERVER,
        # An over-long or missing token matches no digest (and is refused as unknown).
        "checksum": digest(raw) if raw and len(raw) <= MAX_TOKEN_LENGTH else "",
    }
    with connections[alias].cursor() as cursor:
        cursor.execute(_lookup_sql(alias), params)
        row = cursor.fetchone()
    (t_id, t_client_id, t_name, t_uri, any_target, a_id, expires, scope, resource, act, family, issuer) = row[:12]
    user_id, app_id, is_active, app_client_id, app_status, app_deleted_at, app_owner, refresh_family, auth_time = row[
        12:
    ]
    target = None
    if t_id is not None:
        target = instance(
            OAuthClient, alias, {"id": t_id, "client_id": t_client_id, "name": t_name, "resource_uri": t_uri}
        )
    subject = None
    if a_id is not None:
        subject = instance(
            AccessToken,
            alias,
            {
                "id": a_id,
                "expires": expires,
                "scope": scope,
                "resource": json_value(AccessToken, "resource", resource, alias),
                "act": json_value(AccessToken, "act", act, alias),
                "token_family": family,
                "assertion_issuer": issuer,
                "user_id": user_id,
                "application_id": app_id,
            },
        )
        app = None
        if app_id is not None:
            values = {
                "id": app_id,
                "client_id": app_client_id,
                "status": app_status,
                "deleted_at": app_deleted_at,
                "user_id": app_owner,
            }
            app = instance(OAuthClient, alias, values)
        user = instance(get_user_model(), alias, {"id": user_id, "is_active": is_active}) if user_id else None
        AccessToken._meta.get_field("application").set_cached_value(subject, app)
        AccessToken._meta.get_field("user").set_cached_value(subject, user)
    return Looked(
        target=target, any_target=bool(any_target), subject=subject, family=refresh_family, auth_time=auth_time
    )


def _look_up(*, caller: OAuthClient, uri: str, raw: str | None) -> Looked:
    """The target, the subject and its family: one statement on PostgreSQL, the ORM elsewhere
    (plumbing.handwritten.handwritten_alias, the one switch)."""
    alias = handwritten_alias(AccessToken)
    if alias is not None:
        return _look_up_in_one_statement(alias, caller=caller, uri=uri, raw=raw)
    target = exchange_target_get(client=caller, resource_uri=uri)
    any_target = target is not None or ExchangeTarget.objects.filter(client=caller).exists()
    subject = _subject_row(raw) if target is not None else None
    family, auth_time = _family_and_auth_time(subject) if subject is not None else (None, None)
    return Looked(target=target, any_target=any_target, subject=subject, family=family, auth_time=auth_time)


class TokenExchangeGrant(SingleTokenGrant):
    """grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693 §2; oauthflows.grants.TOKEN_EXCHANGE)."""

    state = ExchangeState

    def validate_token_request(self, request) -> None:
        # RFC 8693 §2.1: the subject is an access token, and an access token is what is issued.
        if not _param(request, "subject_token"):
            raise errors.InvalidRequestError(description="The subject_token parameter is required.", request=request)
        if _param(request, "subject_token_type") != ACCESS_TOKEN_TYPE:
            raise errors.InvalidRequestError(
                description=f"subject_token_type must be {ACCESS_TOKEN_TYPE}.", request=request
            )
        requested = _param(request, "requested_token_type")
        if requested is not None and requested != ACCESS_TOKEN_TYPE:
            raise errors.InvalidRequestError(
                description=f"Only access tokens are issued by exchange: requested_token_type {ACCESS_TOKEN_TYPE}.",
                request=request,
            )
        if "actor_token" in request._params or "actor_token_type" in request._params:
            raise errors.InvalidRequestError(
                description="actor_token is not accepted: the calling resource server's authentication is the actor.",
                request=request,
            )
        if not self.request_validator.authenticate_client(request):
            raise errors.InvalidClientError(request=request)
        caller = request.client
        if not caller.is_resource_server:
            raise errors.UnauthorizedClientError(
                description="Only a resource server exchanges tokens (RFC 8693), for the services it calls.",
                request=request,
            )
        uri = _target_uri(request)
        looked = _look_up(caller=caller, uri=uri, raw=_param(request, "subject_token"))
        target = looked.target
        if target is None and not looked.any_target:
            raise errors.UnauthorizedClientError(
                description="An administrator has allowed this resource server no token exchange.", request=request
            )
        if target is None:
            raise errors.CustomOAuth2Error(
                error="invalid_target",
                description=f"This resource server may not exchange tokens toward {uri[:200]!r}.",
                request=request,
            )
        subject = _subject_check(looked.subject, caller, request)
        scopes = _scopes(request, subject)
        app = subject.application
        refusal = ceiling_refusal(app, scopes)  # a ceiling lowered since the subject was issued
        if refusal:
            raise errors.InvalidScopeError(description=refusal, request=request)
        if not client_may_act(app, subject.user, Door.GRANT):  # a pending app: its owner's own tokens only
            raise errors.InvalidGrantError(description=SUBJECT_REFUSED, request=request)
        # RFC 8693 §2.2.1: never longer-lived than what it was exchanged from.
        remaining = int((subject.expires - timezone.now()).total_seconds())
        lifetime = min(oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS, remaining)
        if lifetime < 1:
            raise errors.InvalidGrantError(description=SUBJECT_REFUSED, request=request)
        act = {"sub": caller.client_id} | ({"act": subject.act} if subject.act else {})
        # From here on the request describes the token to issue: the app's, for the user, bound to
        # the target (the rate limiter and the logs still see the caller, oauthflows.token.oauth2.client_call).
        request.user = subject.user
        request.client = app
        request.scopes = scopes
        request.resource = [target.resource_uri]
        # The subject's lineage carried on (its family, its assertion's issuer), and the subject
        # itself for the audit: ending any ancestor ends this token too (tokens.services).
        lineage = Lineage.of_exchange(subject, family=looked.family)
        request.grant_state = ExchangeState(act=act, lifetime=lifetime, lineage=lineage, auth_time=looked.auth_time)
