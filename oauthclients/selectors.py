"""Reads of the client registry. Developer pages go through the owner-scoped ones (404 otherwise)."""

import itertools
import re
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from oauthclients.models import ClientSecret, ClientStatus, OAuthClient


def _owned(owner) -> QuerySet[OAuthClient]:
    # A deleted client is gone for its owner; it stays in the admin, with its audit trail.
    return OAuthClient.objects.filter(user=owner, deleted_at__isnull=True).defer("logo_png")


def client_list_for_owner(*, owner) -> QuerySet[OAuthClient]:
    return _owned(owner).order_by("-created")


def client_get_for_owner(*, owner, client_id: str) -> OAuthClient:
    """The owner's client with this client_id, or Http404 (another developer's client too)."""
    return get_object_or_404(_owned(owner), client_id=client_id)


def client_exists_for_owner(*, owner) -> bool:
    """Whether this user owns a client: a developer lands on the developer page after logging in."""
    return getattr(owner, "pk", None) is not None and _owned(owner).exists()


def client_logo_get(*, client_id: str) -> tuple[bytes, object] | None:
    """(PNG bytes, last change) of a client's logo, or None."""
    row = (
        OAuthClient.objects.filter(client_id=client_id, logo_updated_at__isnull=False)
        .values_list("logo_png", "logo_updated_at")
        .first()
    )
    return (bytes(row[0]), row[1]) if row and row[0] is not None else None


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


@cache
def integration_guide_html() -> str:
    """docs/integrating.md as HTML (CommonMark with tables; raw HTML in the file is escaped)."""
    from markdown_it import MarkdownIt

    text = (settings.BASE_DIR / "docs" / "integrating.md").read_text(encoding="utf-8")
    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    # Accessible as a page: a wide code block can be scrolled from the keyboard, and an empty
    # header cell (a table whose first column has no title) is a plain cell.
    html = html.replace("<pre>", '<pre tabindex="0">').replace("<th></th>", "<td></td>")
    # A wide table scrolls in its own keyboard-reachable region on a phone.
    numbers = itertools.count(1)
    html = re.sub(
        "<table>",
        lambda _match: f'<div class="scroll" tabindex="0" role="region" aria-label="Table {next(numbers)}"><table>',
        html,
    )
    return html.replace("</table>", "</table></div>")
