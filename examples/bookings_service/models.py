"""The example service's own data: a few bookings per user, and what it was called with."""

from django.db import models


class Booking(models.Model):
    """One of a user's bookings, keyed by the token's `sub` (this service has no user table)."""

    subject = models.CharField(max_length=64, db_index=True)
    title = models.CharField(max_length=200)
    start = models.DateTimeField()
    end = models.DateTimeField()
    # Who made it: the app the token was issued to and, for an exchanged token, the service that
    # called for the user (RFC 8693 `act.sub`).
    client_id = models.CharField(max_length=255, blank=True, default="")
    actor = models.CharField(max_length=255, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "bookings_service"  # importable from the authorization server's tests too
        ordering = ["start", "id"]

    def __str__(self):
        return f"{self.title} at {self.start:%Y-%m-%d %H:%M}"


class Call(models.Model):
    """Each authorized call, as received: the SHA-256 of the bearer token (never the token), its
    client and actor. What lets a test (and an operator) see that no token was passed on to it."""

    token_sha256 = models.CharField(max_length=64)
    client_id = models.CharField(max_length=255)
    actor = models.CharField(max_length=255, blank=True, default="")
    audience = models.JSONField(default=list)
    method = models.CharField(max_length=8)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "bookings_service"

    def __str__(self):
        return f"{self.method} by {self.client_id}" + (f" through {self.actor}" if self.actor else "")
