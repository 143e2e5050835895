"""Reads about accounts: where a signed-in user lands."""

from django.urls import reverse

from oauthclients.selectors import client_exists_for_owner


def landing_url_for(user) -> str:
    """A developer (anyone who owns a client) lands on the developer page; everyone else on Connected apps."""
    if client_exists_for_owner(owner=user):
        return reverse("developer:client_list")
    return reverse("oauth:connected_apps")


def authenticator_list_for_user(*, user) -> list:
    """The user's second factors (TOTP, recovery codes, passkeys), oldest first."""
    from allauth.mfa.models import Authenticator  # models: not at import time of the URLconf

    return list(Authenticator.objects.filter(user=user).order_by("created_at", "pk"))
