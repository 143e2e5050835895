"""The review queue's size, for the admin index."""

from django import template

from oauthclients.models import ClientStatus, OAuthClient

register = template.Library()


@register.simple_tag
def pending_client_count() -> int:
    return OAuthClient.objects.filter(status=ClientStatus.PENDING).count()


@register.simple_tag
def unverified_client_count() -> int:
    """Self-registered clients in use within the ceiling, awaiting an administrator's decision."""
    return OAuthClient.objects.filter(status=ClientStatus.UNVERIFIED, deleted_at__isnull=True).count()
