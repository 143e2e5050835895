"""The review queue's size, for the admin index."""

from django import template

from oauthclients.models import ClientStatus, OAuthClient

register = template.Library()


@register.simple_tag
def pending_client_count() -> int:
    return OAuthClient.objects.filter(status=ClientStatus.PENDING).count()
