"""The Django admin shows times in the signed-in administrator's own time zone."""

from django.db import DatabaseError
from django.utils import timezone

from plumbing.paths import ADMIN_KINDS, endpoint_kind
from profiles.context_processors import time_zone_for_user


class AdminTimeZoneMiddleware:
    """Activates the profile's zone for /admin/ requests (our own pages do it in base.html).

    Only the admin: it renders datetimes through Django's current time zone, and this costs one
    profile lookup, which the OAuth endpoints and the API do not pay.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if endpoint_kind(request.path_info) not in ADMIN_KINDS or not getattr(request, "user", None):
            return self.get_response(request)
        try:
            zone = time_zone_for_user(request.user)
        except DatabaseError:
            return self.get_response(request)  # the outage page follows; UTC is fine for it
        timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
