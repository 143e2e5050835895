"""Builders for the test cast: an owner developer, another developer, a staff reviewer, an end user."""

import itertools

from django.contrib.auth import get_user_model

from oauthclients import services
from oauthclients.models import ClientKind

_counter = itertools.count(1)
PASSWORD = "correct-horse-battery-staple"


def make_user(username: str | None = None, *, staff: bool = False, **extra):
    username = username or f"user{next(_counter)}"
    User = get_user_model()
    return User.objects.create_user(
        username=username,
        email=f"{username}@example.com",
        password=PASSWORD,
        is_staff=staff,
        is_superuser=staff,
        **extra,
    )


def make_client(
    owner,
    *,
    name: str = "Calendar Sync",
    kind: str = ClientKind.CONFIDENTIAL,
    redirect_uris: list[str] | None = None,
    scopes: list[str] | None = None,
    is_legacy: bool = False,
    approve: bool = False,
    website_url: str = "https://calendar-sync.example.com",
    purpose: str = "Syncs bookings to your calendar.",
):
    """Create a client through the service, as the app does. Returns services.ClientCreated."""
    return services.client_create(
        owner=owner,
        name=name,
        purpose=purpose,
        website_url=website_url,
        kind=kind,
        redirect_uris=redirect_uris or ["https://calendar-sync.example.com/callback"],
        scopes=[] if is_legacy else (scopes or ["PROFILE_READ", "BOOKING_READ"]),
        is_legacy=is_legacy,
        approve=approve,
        actor=owner,
    )


def make_resource_server(owner, *, name: str = "Bookings API"):
    """A resource server (approved at once) and its first secret. Returns services.ClientCreated."""
    return services.resource_server_create(owner=owner, name=name, actor=owner)


def make_tokens(user, client, *, scope: str = "PROFILE_READ") -> tuple[str, str]:
    """A live access and refresh token pair of `client` for `user`, as an exchange leaves them; the raw values."""
    import secrets
    import uuid
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import set_token_value

    from oauthclients.models import AccessToken, RefreshToken

    raw_access, raw_refresh = "at_" + secrets.token_urlsafe(32), "rt_" + secrets.token_urlsafe(32)
    access = AccessToken(user=user, application=client, scope=scope, expires=timezone.now() + timedelta(hours=1))
    set_token_value(access, raw_access)
    access.save()
    refresh = RefreshToken(user=user, application=client, access_token=access, token_family=uuid.uuid4())
    set_token_value(refresh, raw_refresh)
    refresh.save()
    return raw_access, raw_refresh
