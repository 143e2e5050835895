"""Reads about a user's grants."""

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Max, Min
from django.http import Http404
from django.utils import timezone

from accounts.models import IdentityProvider
from oauthclients.models import AccessToken, Grant, OAuthClient, RefreshToken
from scopes.catalog import OPENID_SCOPES, group_by_resource
from tokens.liveness import alive_q
from tokens.models import Consent


@dataclass(frozen=True)
class ConnectedApp:
    client: OAuthClient
    scope_resources: list  # by resource, as on the consent page (scopes.catalog.group_by_resource)
    unrestricted: bool
    authorized_at: datetime
    last_used_at: datetime | None
    # OpenID Connect: "Sign you in" and what profile and email read, as on the consent page.
    identity_lines: tuple[str, ...] = ()
    # RFC 8693: the services reaching others with this app's access for the user ("through
    # Scheduling MCP"), from their live exchanged tokens (oauthflows.token.exchange).
    through: tuple[str, ...] = ()
    # ID-JAG (oauthflows.token.idjag): the organizations whose identity providers granted this access,
    # with no consent page ("allowed by your organization").
    allowed_by: tuple[str, ...] = ()

    @property
    def higher_risk_count(self) -> int:
        return sum(1 for resource in self.scope_resources if resource.higher_risk)


def _live_refresh_tokens(user):
    # A refresh token is live while not revoked and within its lifetime after its access token.
    return RefreshToken.objects.filter(alive_q(RefreshToken), user=user)


def _pending_codes(user):
    # Access granted (Allow) whose code the app has not redeemed yet: shown at once, so that the
    # page the user opens right after Allow names the app (revoking it uses the code up:
    # oauthclients.grants.grants_end).
    return Grant.objects.filter(alive_q(Grant), user=user)


def connected_app_list_for_user(*, user) -> list[ConnectedApp]:
    """Every app holding live tokens for this user, or a code not yet redeemed, newest authorization first."""
    live = _live_refresh_tokens(user)
    asserted = _asserted_access(user)
    pending = list(_pending_codes(user).values_list("application_id", "scope"))
    client_ids = set(live.values_list("application_id", flat=True)) | set(asserted) | {pk for pk, _ in pending}
    if not client_ids:
        return []
    scopes_by_client: dict[int, set[str]] = {pk: set(scopes) for pk, (_issuers, scopes) in asserted.items()}
    unrestricted: set[int] = set()
    for client_id, scope in [*live.values_list("application_id", "access_token__scope"), *pending]:
        if not scope:
            unrestricted.add(client_id)
        scopes_by_client.setdefault(client_id, set()).update(scope.split())
    issuers = set().union(*(issuers for issuers, _scopes in asserted.values())) if asserted else set()
    organizations = dict(IdentityProvider.objects.filter(issuer__in=issuers).values_list("issuer", "name"))
    consents = {c.client_id: c for c in Consent.objects.filter(user=user, client_id__in=client_ids)}
    # "Last used": the last time the app obtained a token for this user (exchange or refresh).
    usage = {
        row["application_id"]: row
        for row in AccessToken.objects.filter(user=user, application_id__in=client_ids)
        .values("application_id")
        .annotate(last=Max("created"), first=Min("created"))
    }
    through = _exchanged_through(user, client_ids)
    apps = []
    for client in OAuthClient.objects.filter(pk__in=client_ids).select_related("user"):
        consent = consents.get(client.pk)
        used = usage.get(client.pk, {})
        apps.append(
            ConnectedApp(
                client=client,
                scope_resources=group_by_resource(sorted(scopes_by_client.get(client.pk, ()))),
                identity_lines=tuple(
                    description
                    for name, description in OPENID_SCOPES.items()
                    if name in scopes_by_client.get(client.pk, ())
                ),
                unrestricted=client.pk in unrestricted,
                authorized_at=consent.first_authorized_at if consent else used.get("first"),
                last_used_at=used.get("last"),
                through=through.get(client.pk, ()),
                allowed_by=tuple(
                    sorted(organizations.get(issuer, issuer) for issuer in asserted.get(client.pk, ((), ()))[0])
                ),
            )
        )
    return sorted(apps, key=lambda app: app.authorized_at or timezone.now(), reverse=True)


def _asserted_access(user) -> dict[int, tuple[set[str], set[str]]]:
    """Per app, the issuers and scopes of its live access tokens granted by an ID-JAG (no refresh token)."""
    rows = (
        AccessToken.objects.filter(alive_q(AccessToken), user=user)
        .exclude(assertion_issuer="")
        .values_list("application_id", "assertion_issuer", "scope")
    )
    found: dict[int, tuple[set[str], set[str]]] = {}
    for client_pk, issuer, scope in rows:
        issuers, scopes = found.setdefault(client_pk, (set(), set()))
        issuers.add(issuer)
        scopes.update(scope.split())
    return found


def _exchanged_through(user, client_ids) -> dict[int, tuple[str, ...]]:
    """Per app, the names of the resource servers holding live exchanged tokens of it for `user`."""
    acts = AccessToken.objects.filter(
        alive_q(AccessToken), user=user, application_id__in=client_ids, act__isnull=False
    ).values_list("application_id", "act")
    callers: dict[int, set[str]] = {}
    for client_pk, act in acts:
        callers.setdefault(client_pk, set()).add(str((act or {}).get("sub", "")))
    if not callers:
        return {}
    wanted = set().union(*callers.values())
    names = dict(OAuthClient.objects.filter(client_id__in=wanted).values_list("client_id", "name"))
    return {pk: tuple(sorted(names[sub] for sub in subs if sub in names)) for pk, subs in callers.items()}


def connected_app_get_for_user(*, user, client_id: str) -> ConnectedApp:
    """The user's connected app with this client_id, or Http404."""
    for app in connected_app_list_for_user(user=user):
        if app.client.client_id == client_id:
            return app
    raise Http404("No such connected app.")


# OpenID Connect: what a login session carries for the ID token (docs/openid-connect.md).
SESSION_AUTH_TIME_KEY = "oidc_auth_time"  # seconds since the epoch of the password login
SESSION_SID_KEY = "oidc_sid"  # the session's `sid` claim: random, unrelated to the session key


def session_auth_time(*, request) -> datetime | None:
    """When the signed-in user last typed their password in this session (OpenID Connect
    `auth_time`): recorded by the login page; a session from another login (the admin's) falls back
    to the user's last login, which is never earlier than that session's."""
    recorded = request.session.get(SESSION_AUTH_TIME_KEY)
    if isinstance(recorded, int) and recorded > 0:
        return datetime.fromtimestamp(recorded, tz=UTC)
    return request.user.last_login
