"""Writes about identity providers: add and remove, each audited in its transaction."""

from django.db import transaction
from django.urls import reverse
from django.utils.text import slugify

from accounts.audit import account_audit_record
from accounts.models import AccountAuditAction, IdentityProvider
from oauthclients.keys import secret_seal


@transaction.atomic
def identity_provider_add(
    *, name: str, issuer: str, client_id: str, client_secret: str, domains: list[str], enforce: bool, actor=None
) -> IdentityProvider:
    """A new upstream provider; its secret is sealed, never kept in the clear."""
    provider = IdentityProvider.objects.create(
        slug=slugify(name)[:40] or "provider",
        name=name,
        issuer=issuer.rstrip("/"),
        client_id=client_id,
        client_secret_sealed=secret_seal(client_secret),
        domains=sorted({domain.strip().lower() for domain in domains if domain.strip()}),
        enforce=enforce,
    )
    account_audit_record(
        actor=actor,
        action=AccountAuditAction.IDENTITY_PROVIDER_ADDED,
        provider=provider.slug,
        issuer=provider.issuer,
        domains=provider.domains,
        enforce=provider.enforce,
    )
    return provider


@transaction.atomic
def identity_provider_remove(*, slug: str, actor=None) -> None:
    provider = IdentityProvider.objects.select_for_update().get(slug=slug)
    account_audit_record(actor=actor, action=AccountAuditAction.IDENTITY_PROVIDER_REMOVED, provider=slug)
    provider.delete()


def identity_provider_redirect_uri(*, provider: IdentityProvider, issuer: str) -> str:
    """The redirect URI to register at the provider (allauth's openid_connect callback)."""
    return issuer + reverse("openid_connect_callback", kwargs={"provider_id": provider.slug})
