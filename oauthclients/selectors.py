"""Reads of the client registry. Developer pages go through the owner-scoped ones (404 otherwise)."""

import hmac
from dataclasses import dataclass

from django.conf import settings
from django.db import DataError
from django.db.models import Case, CharField, OuterRef, QuerySet, Subquery, Value, When
from django.shortcuts import get_object_or_404

from oauthclients.models import ClientKind, ClientSecret, ClientStatus, OAuthClient, digest
from oauthclients.policy import Door, client_may_act, client_serves_q


def _owned(owner) -> QuerySet[OAuthClient]:
    # A deleted client is gone for its owner; it stays in the admin, with its audit trail.
    # Resource servers are administrators' business: never on a developer page.
    return (
        OAuthClient.objects.filter(user=owner, deleted_at__isnull=True)
        .exclude(client_type=ClientKind.RESOURCE_SERVER)
        .defer("logo_png")
    )


def client_list_for_owner(*, owner) -> QuerySet[OAuthClient]:
    return _owned(owner).order_by("-created")


def client_get_for_owner(*, owner, client_id: str) -> OAuthClient:
    """The owner's client with this client_id, or Http404 (another developer's client, a resource server)."""
    return get_object_or_404(_owned(owner), client_id=client_id)


def client_name_taken_for_owner(*, owner, name: str, exclude_client_id: str | None = None) -> bool:
    """Whether another of the owner's clients has this name (case and surrounding spaces aside)."""
    clients = _owned(owner).filter(name__iexact=(name or "").strip())
    if exclude_client_id is not None:
        clients = clients.exclude(client_id=exclude_client_id)
    return clients.exists()


def client_exists_for_owner(*, owner) -> bool:
    """Whether this user owns a client: a developer lands on the developer page after logging in."""
    return getattr(owner, "pk", None) is not None and _owned(owner).exists()


def client_logo_get(*, client_id: str) -> bytes | None:
    """The approved logo (PNG) of a client users can be sent to authorize, or None.

    Pending, rejected and deleted clients and resource servers have none: a client thrown out must
    not keep this origin's credibility for its logo, and an upload nobody reviewed reaches no one.
    """
    try:
        row = (
            OAuthClient.objects.filter(client_serves_q(), client_id=client_id, approved_logo_png__isnull=False)
            .exclude(client_type=ClientKind.RESOURCE_SERVER)
            .values_list("approved_logo_png", flat=True)
            .first()
        )
    except (ValueError, DataError):  # a client_id the database cannot hold (NUL): none
        return None
    return bytes(row) if row is not None else None


def client_current_logo_get_for_owner(*, owner, client_id: str) -> bytes | None:
    """The logo as uploaded (perhaps awaiting review), for its owner's own pages only."""
    row = _owned(owner).filter(client_id=client_id).values_list("logo_png", flat=True).first()
    return bytes(row) if row is not None else None


def client_get(*, client_id: str) -> OAuthClient | None:
    try:
        return OAuthClient.objects.select_related("user").get(client_id=client_id)
    except (OAuthClient.DoesNotExist, ValueError):
        return None


def client_is_public(*, client_id: str | None) -> bool:
    """Whether client_id names a public client (one indexed lookup, the same for unknown ids)."""
    if not client_id or len(client_id) > 255 or "\x00" in client_id:
        return False
    return OAuthClient.objects.filter(client_id=client_id, client_type=ClientKind.PUBLIC).exists()


def client_list(*, status: str | None = None) -> QuerySet[OAuthClient]:
    clients = OAuthClient.objects.select_related("user").order_by("-created")
    if status:
        clients = clients.filter(status=status)
    return clients


def client_secret_list_active(*, client: OAuthClient) -> QuerySet[ClientSecret]:
    return client.secrets.filter(revoked_at__isnull=True).order_by("created", "id")


def client_secret_list(*, client: OAuthClient) -> QuerySet[ClientSecret]:
    return client.secrets.order_by("created", "id")


@dataclass(frozen=True)
class OAuthEndpoints:
    authorization_url: str
    access_token_url: str
    refresh_token_url: str
    revocation_url: str
    introspection_url: str
    metadata_url: str


def oauth_endpoints() -> OAuthEndpoints:
    """The URLs a client needs, under the issuer: authorize, token (exchange and refresh), revoke,
    introspect, and the RFC 8414 metadata document that lists them all."""
    issuer = settings.OAUTH_ISSUER
    # Exchange and refresh share one path.
    token_url = issuer + settings.OAUTH_TOKEN_PATH
    return OAuthEndpoints(
        authorization_url=issuer + settings.OAUTH_AUTHORIZE_PATH,
        access_token_url=token_url,
        refresh_token_url=token_url,
        revocation_url=issuer + settings.OAUTH_REVOKE_PATH,
        introspection_url=issuer + settings.OAUTH_INTROSPECT_PATH,
        metadata_url=issuer + settings.OAUTH_METADATA_PATH,
    )


def resource_uri_known(uri: str) -> bool:
    """Whether `uri` names a protected resource tokens may be bound to (RFC 8707): this server's
    own API (OAUTH_RESOURCE_URI) or an approved resource server's resource URI. Compared exactly."""
    if uri == settings.OAUTH_RESOURCE_URI:
        return True
    return OAuthClient.objects.filter(
        client_serves_q(), client_type=ClientKind.RESOURCE_SERVER, resource_uri=uri
    ).exists()


def resource_names(uris) -> list[tuple[str, str]]:
    """(name, URI) of each protected resource, for the consent page: the own API's
    OAUTH_RESOURCE_NAME, a resource server's name; one query for them all."""
    names = dict(
        OAuthClient.objects.filter(client_type=ClientKind.RESOURCE_SERVER, resource_uri__in=list(uris)).values_list(
            "resource_uri", "name"
        )
    )
    names.setdefault(settings.OAUTH_RESOURCE_URI, getattr(settings, "OAUTH_RESOURCE_NAME", "") or "")
    return [(names.get(uri) or uri, uri) for uri in uris]


def _verified_named(skeleton) -> QuerySet[OAuthClient]:
    # Approved apps (never resource servers, never deleted) whose name reads as `skeleton`. An
    # approved client's name is the one users are shown: an edit of it sends it back to review.
    return OAuthClient.objects.filter(client_serves_q(), name_skeleton=skeleton).exclude(
        client_type=ClientKind.RESOURCE_SERVER
    )


def verified_name_like(client: OAuthClient) -> str | None:
    """The name of an approved app that `client` (self-registered) is named like, or None: the two
    names' UTS #39 skeletons are equal (validators.name_skeleton). One indexed lookup."""
    if not client.name_skeleton:
        return None
    return _verified_named(client.name_skeleton).exclude(pk=client.pk).values_list("name", flat=True).first()


def clients_with_verified_name_like(queryset: QuerySet[OAuthClient]) -> QuerySet[OAuthClient]:
    """`queryset` with `verified_name_like` on each unverified client (None on the others), in the
    same query: the admin's unverified queue asks it of every row."""
    like = _verified_named(OuterRef("name_skeleton")).exclude(pk=OuterRef("pk")).exclude(name_skeleton="")
    return queryset.annotate(
        verified_name_like=Case(
            When(status=ClientStatus.UNVERIFIED, then=Subquery(like.values("name")[:1])),
            default=Value(None),
            output_field=CharField(),
        )
    )


def client_get_for_registration_token(*, client_id: str, token: str) -> OAuthClient | None:
    """The RFC 7591 client that `token` (its RFC 7592 registration access token) manages, or None:
    an unknown client, a wrong token, a rejected or deleted client are alike (RFC 7592 §2)."""
    given = digest(token)  # computed whatever the client, so that no answer is faster
    client = OAuthClient.objects.filter(
        client_id=client_id, registration_source=OAuthClient.RegistrationSource.DCR
    ).first()
    if not client_may_act(client, None, Door.CLIENT_AUTHENTICATION) or not client.registration_token_digest:
        return None
    if not hmac.compare_digest(client.registration_token_digest, given):
        return None
    return client
