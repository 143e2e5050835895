"""Reads about a user's grants."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.core.cache import caches
from django.db.models import Max, Min
from django.http import Http404
from django.utils import timezone
from oauth2_provider.settings import oauth2_settings

from oauthclients.models import (
    AccessToken,
    ClientKind,
    ClientStatus,
    Consent,
    OAuthClient,
    RefreshToken,
)
from oauthclients.validators import web_origin
from scopes.catalog import OPENID_SCOPES, group_by_resource


@dataclass(frozen=True)
class ConnectedApp:
    client: OAuthClient
    scope_resources: list  # by resource, as on the consent page (scopes.catalog.group_by_resource)
    unrestricted: bool
    authorized_at: datetime
    last_used_at: datetime | None
    # OpenID Connect: "Sign you in" and what profile and email read, as on the consent page.
    identity_lines: tuple[str, ...] = ()

    @property
    def higher_risk_count(self) -> int:
        return sum(1 for resource in self.scope_resources if resource.higher_risk)


def _live_refresh_tokens(user):
    # A refresh token is live while not revoked and within its lifetime after its access token.
    horizon = timezone.now() - timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)
    return RefreshToken.objects.filter(
        user=user, revoked__isnull=True, access_token__isnull=False, access_token__expires__gt=horizon
    ).exclude(application__status=ClientStatus.REJECTED)


def connected_app_list_for_user(*, user) -> list[ConnectedApp]:
    """Every app holding live tokens for this user, newest authorization first."""
    live = _live_refresh_tokens(user)
    client_ids = set(live.values_list("application_id", flat=True))
    if not client_ids:
        return []
    scopes_by_client: dict[int, set[str]] = {}
    unrestricted: set[int] = set()
    for client_id, scope in live.values_list("application_id", "access_token__scope"):
        if not scope:
            unrestricted.add(client_id)
        scopes_by_client.setdefault(client_id, set()).update(scope.split())
    consents = {c.client_id: c for c in Consent.objects.filter(user=user, client_id__in=client_ids)}
    # "Last used": the last time the app obtained a token for this user (exchange or refresh).
    usage = {
        row["application_id"]: row
        for row in AccessToken.objects.filter(user=user, application_id__in=client_ids)
        .values("application_id")
        .annotate(last=Max("created"), first=Min("created"))
    }
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
            )
        )
    return sorted(apps, key=lambda app: app.authorized_at or timezone.now(), reverse=True)


def connected_app_get_for_user(*, user, client_id: str) -> ConnectedApp:
    """The user's connected app with this client_id, or Http404."""
    for app in connected_app_list_for_user(user=user):
        if app.client.client_id == client_id:
            return app
    raise Http404("No such connected app.")


def _cors_clients():
    # Approved and unverified public clients (any user may authorize those): a pending or rejected
    # client's redirect URIs are usable by nobody else.
    return OAuthClient.objects.filter(
        client_type=ClientKind.PUBLIC,
        status__in=(ClientStatus.APPROVED, ClientStatus.UNVERIFIED),
        deleted_at__isnull=True,
    )


def _origins(redirect_uris: str) -> set[str]:
    return {origin for origin in map(web_origin, redirect_uris.split()) if origin}


def cors_origins_for_client(*, client_id: str) -> set[str]:
    """The web origins of an approved public client's redirect URIs (none for any other client)."""
    if not isinstance(client_id, str) or not client_id or len(client_id) > 255 or "\x00" in client_id:
        return set()
    client = _cors_clients().filter(client_id=client_id).only("redirect_uris").first()
    return _origins(client.redirect_uris) if client is not None else set()


CORS_ORIGINS_CACHE_KEY = "cors:registered-origins"
CORS_ORIGINS_CACHE_SECONDS = 60


def cors_registered_origins() -> frozenset[str]:
    """Every exact origin of every approved public client's redirect URIs, for CORS preflights.

    One set, built from all such clients and kept in the cache for a minute (dropped at once in this
    process when a client is approved, rejected, edited or deleted), so that no number of other
    clients' redirect URIs can crowd an app's origin out of it.
    """
    cache = caches["default"]
    origins = cache.get(CORS_ORIGINS_CACHE_KEY)
    if origins is None:
        origins = frozenset(
            origin for uris in _cors_clients().values_list("redirect_uris", flat=True) for origin in _origins(uris)
        )
        cache.set(CORS_ORIGINS_CACHE_KEY, origins, CORS_ORIGINS_CACHE_SECONDS)
    return origins


def cors_registered_origins_forget() -> None:
    caches["default"].delete(CORS_ORIGINS_CACHE_KEY)


def cors_origin_is_registered(*, origin: str) -> bool:
    """Whether some approved public client has a redirect URI at exactly this web origin."""
    if not origin or len(origin) > 300 or "\x00" in origin:
        return False
    return origin in cors_registered_origins()


def consent_covers(*, user, client: OAuthClient, scopes: list[str]) -> bool:
    """Whether the user's standing consent to this approved client covers these scopes (one query).

    The user's last Allow must have granted at least them (an unrestricted grant covers only an
    unrestricted request), after the client's last approval, so that nothing users are shown (and
    nothing they granted) has changed since. Revoking the app under Connected apps, a rejection,
    a deletion or the user's deactivation deletes the consent, so the page is shown again.
    """
    if client.status != ClientStatus.APPROVED:
        return False
    row = (
        Consent.objects.filter(user=user, client=client)
        .values_list("last_authorized_at", "scope", "unrestricted")
        .first()
    )
    if row is None:
        return False
    authorized_at, granted, unrestricted = row
    if client.reviewed_at is not None and authorized_at < client.reviewed_at:
        return False
    if not scopes:
        return unrestricted
    return set(scopes) <= set(granted.split())


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
