"""The registry's audit trail: who did what to which client, and when (oauthclients.audit writes it)."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from oauthclients.models.clients import ClientKind, OAuthClient


class AuditAction(models.TextChoices):
    CLIENT_CREATED = "client.created", _("Client created")
    CLIENT_UPDATED = "client.updated", _("Client edited")
    CLIENT_RESUBMITTED = "client.resubmitted", _("Client sent back to review")
    CLIENT_APPROVED = "client.approved", _("Client approved")
    CLIENT_REJECTED = "client.rejected", _("Client rejected")
    CLIENT_SCOPES_SET = "client.scopes_set", _("Client scopes set")
    SECRET_CREATED = "secret.created", _("Secret created")
    SECRET_REVOKED = "secret.revoked", _("Secret revoked")
    GRANT_AUTHORIZED = "grant.authorized", _("User authorized the app")
    GRANT_DENIED = "grant.denied", _("User denied the app")
    CLIENT_DELETED = "client.deleted", _("Client deleted by its owner")
    ACCESS_REVOKED = "grant.access_revoked", _("User revoked the app's access")
    FAMILY_REVOKED = "grant.family_revoked", _("Token family revoked on replay")
    USER_DEACTIVATED = "grant.user_deactivated", _("User deactivated: their access ended")
    CLIENT_SELF_REGISTERED = "client.self_registered", _("Client registered itself")
    CLIENT_UNUSED_REMOVED = "client.unused_removed", _("Unused self-registration removed")
    EXCHANGE_TARGETS_SET = "client.exchange_targets_set", _("Token exchange targets set")
    REGISTRATION_TOKEN_ISSUED = "client.registration_token_issued", _("Registration access token issued")


class ClientAuditEvent(models.Model):
    """Who did what to which client, and when. Written in the same transaction as the change."""

    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The end user a grant event concerns (the actor may be someone else, or nobody).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    # Never a credential: field names, statuses, secret ids and hints only.
    detail = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name = "audit event"
        indexes = [models.Index(fields=["client", "-created"])]

    def __str__(self):
        return f"{self.get_action_display()} · {self.client_id}"

    def sentence(self) -> str:
        """The event as a sentence an administrator reads in the audit trail, instead of its JSON."""
        who = self.actor.get_username() if self.actor_id and self.actor else "The system"
        user = self.user.get_username() if self.user_id and self.user else "a user"
        detail = self.detail or {}

        def listed(key: str) -> str:
            values = detail.get(key) or []
            # Field names read as words ("website url"); scope names stay as written (BOOKING_READ).
            words = key in ("changed", "because")
            return ", ".join(str(value).replace("_", " ") if words else str(value) for value in values) or "nothing"

        sentences = {
            AuditAction.CLIENT_CREATED: lambda: (
                f"{who} registered the resource server (introspection only)."
                if detail.get("kind") == ClientKind.RESOURCE_SERVER
                else f"{who} registered the client ({detail.get('kind', 'unknown kind')}"
                + (", legacy" if detail.get("legacy") else "")
                + f") with scopes {listed('scopes')}."
            ),
            AuditAction.CLIENT_UPDATED: lambda: f"{who} edited {listed('changed')}.",
            AuditAction.CLIENT_SCOPES_SET: lambda: f"{who} set the scopes to {listed('scopes')}.",
            AuditAction.CLIENT_RESUBMITTED: lambda: f"The client went back to review because of {listed('because')}.",
            AuditAction.CLIENT_APPROVED: lambda: f"{who} approved the client.",
            AuditAction.CLIENT_REJECTED: lambda: f"{who} rejected the client: “{detail.get('reason', '')}”",
            AuditAction.CLIENT_DELETED: lambda: (
                f"{who} deleted the client; {detail.get('revoked_refresh_tokens', 0)} refresh tokens and "
                f"{detail.get('revoked_access_tokens', 0)} access tokens were revoked."
            ),
            AuditAction.SECRET_CREATED: lambda: f"{who} created a secret (it starts with {detail.get('hint', '')}).",
            AuditAction.SECRET_REVOKED: lambda: f"{who} revoked the secret that starts with {detail.get('hint', '')}.",
            AuditAction.GRANT_AUTHORIZED: lambda: (
                f"{user} authorized the app"
                + (" with full access." if detail.get("unrestricted") else f" for {listed('scopes')}.")
            ),
            AuditAction.GRANT_DENIED: lambda: f"{user} denied the app.",
            AuditAction.ACCESS_REVOKED: lambda: f"{user} revoked the app's access.",
            AuditAction.USER_DEACTIVATED: lambda: (
                f"{user} was deactivated; {detail.get('revoked_refresh_tokens', 0)} refresh tokens, "
                f"{detail.get('revoked_access_tokens', 0)} access tokens and {detail.get('revoked_codes', 0)} "
                "unexchanged codes of this app ended."
            ),
            AuditAction.CLIENT_SELF_REGISTERED: lambda: (
                f"The client registered itself ({detail.get('source', 'dcr')}, {detail.get('kind', 'unknown kind')}) "
                f"as {detail.get('status', 'unverified')} with scopes {listed('scopes')}."
            ),
            AuditAction.CLIENT_UNUSED_REMOVED: lambda: (
                f"The system removed the self-registered client: nobody authorized it within "
                f"{detail.get('days', '?')} days."
            ),
            AuditAction.EXCHANGE_TARGETS_SET: lambda: (
                f"{who} allowed token exchange toward {listed('targets')}."
                if detail.get("targets")
                else f"{who} allowed token exchange toward nothing."
            ),
            AuditAction.REGISTRATION_TOKEN_ISSUED: lambda: (
                f"{who} issued a registration access token"
                + ("; the previous one no longer works." if detail.get("replaced") else ".")
            ),
            AuditAction.FAMILY_REVOKED: lambda: (
                f"{'An authorization code' if 'code' in detail.get('reason', '') else 'A refresh token'} "
                f"was replayed for {user}; its token family was revoked."
            ),
        }
        make = sentences.get(self.action)
        return make() if make else f"{self.get_action_display()}."
