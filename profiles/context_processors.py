"""The signed-in user's time zone for every page: base.html renders times in it and names it."""

import zoneinfo

from django.db import DatabaseError

from profiles.selectors import profile_get_for_user

DEFAULT_TIME_ZONE = "UTC"


def time_zone_for_user(user) -> str:
    """The profile's IANA zone when it is one this machine knows, else UTC."""
    if not getattr(user, "is_authenticated", False):
        return DEFAULT_TIME_ZONE
    name = profile_get_for_user(user=user).time_zone or DEFAULT_TIME_ZONE
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return DEFAULT_TIME_ZONE
    return name


def _for_request(request) -> str:
    try:
        return time_zone_for_user(getattr(request, "user", None))
    except DatabaseError:
        # The 503 page renders base.html too, while the database is unreachable.
        return DEFAULT_TIME_ZONE


def user_time_zone(request) -> dict:
    """A callable, which templates call when they use it: only pages that show it read the profile."""
    found: list[str] = []

    def zone() -> str:
        if not found:
            found.append(_for_request(request))
        return found[0]

    return {"user_time_zone": zone}
