"""Reads of the client registry. Developer pages go through the owner-scoped ones (404 otherwise)."""

from dataclasses import dataclass

from django.conf import settings
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from oauthclients.models import ClientSecret, ClientStatus, OAuthClient


def client_list_for_owner(*, owner) -> QuerySet[OAuthClient]:
    return OAuthClient.objects.filter(user=owner).order_by("-created")


def client_get_for_owner(*, owner, client_id: str) -> OAuthClient:
    """The owner's client with this client_id, or Http404 (another developer's client too)."""
    return get_object_or_404(OAuthClient, user=owner, client_id=client_id)


def client_get(*, client_id: str) -> OAuthClient | None:
    try:
        return OAuthClient.objects.select_related("user").get(client_id=client_id)
    except (OAuthClient.DoesNotExist, ValueError):
        return None


def client_list(*, status: str | None = None) -> QuerySet[OAuthClient]:
    clients = OAuthClient.objects.select_related("user").order_by("-created")
    if status:
        clients = clients.filter(status=status)
    return clients


def client_secret_list_active(*, client: OAuthClient) -> QuerySet[ClientSecret]:
    return client.secrets.filter(revoked_at__isnull=True).order_by("created", "id")


def client_secret_list(*, client: OAuthClient) -> QuerySet[ClientSecret]:
    return client.secrets.order_by("created", "id")


STATUS_VALUES = ClientStatus.values


@dataclass(frozen=True)
class OAuthEndpoints:
    authorization_url: str
    access_token_url: str
    refresh_token_url: str


def oauth_endpoints() -> OAuthEndpoints:
    """The three URLs a client needs (spec §1), under the issuer: §4.1 authorize, §4.2/§4.3 token."""
    issuer = settings.OAUTH_ISSUER
    # Exchange and refresh share one path (spec §4.3).
    token_url = f"{issuer}/v2/auth/oauth2/token"
    return OAuthEndpoints(
        authorization_url=f"{issuer}/auth/oauth2/authorize",
        access_token_url=token_url,
        refresh_token_url=token_url,
    )
