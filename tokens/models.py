"""The token lifecycle's own model: the standing consent (tokens.consents writes, reads and ends it).

It was the registry's until it moved here; its table kept the registry's name (`db_table`), so that
the move copied no row (tokens/migrations/0001_consents.py). django-oauth-toolkit's token models
stay in oauthclients, with their migrations (docs/architecture.md, "Why DOT's models stay").
"""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Consent(models.Model):
    """A user's standing authorization of a client: shown under Connected apps."""

    # No index of its own: the (user, client) constraint leads with it (plumbing.indexes).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="consents", db_index=False
    )
    client = models.ForeignKey("oauthclients.OAuthClient", on_delete=models.CASCADE, related_name="consents")
    first_authorized_at = models.DateTimeField(default=timezone.now)
    last_authorized_at = models.DateTimeField(default=timezone.now)
    # What the last Allow granted (space-separated scope names; empty and `unrestricted` for a
    # legacy client's full access): the state that skipping the consent page reads
    # (tokens.consents.consent_covers), kept here rather than read back from the audit trail.
    scope = models.TextField(blank=True, default="")
    unrestricted = models.BooleanField(default=False)

    class Meta:
        verbose_name = _("consent")
        verbose_name_plural = _("consents")
        db_table = "oauthclients_consent"
        constraints = [models.UniqueConstraint(fields=["user", "client"], name="consent_one_per_user_and_client")]

    def __str__(self):
        return f"Consent of user {self.user_id} for {self.client_id}"

    @property
    def scopes(self) -> list[str]:
        return self.scope.split()
