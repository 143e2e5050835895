"""The registry's audit trail: who did what to which client, and when (oauthclients.audit writes it)."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
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


# A client's kind inside an audit sentence ("registered the client (confidential) with scopes …").
KIND_WORDS = {
    ClientKind.CONFIDENTIAL.value: pgettext_lazy("a client's kind, inside a sentence", "confidential"),
    ClientKind.PUBLIC.value: pgettext_lazy("a client's kind, inside a sentence", "public"),
}


class ClientAuditEvent(models.Model):
    """Who did what to which client, and when. Written in the same transaction as the change."""

    # No index of its own: Meta's (client, -created) leads with it (plumbing.indexes).
    client = models.ForeignKey(
        OAuthClient,
        on_delete=models.CASCADE,
        related_name="audit_events",
        verbose_name=_("client"),
        db_index=False,
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("actor"),
    )
    # The end user a grant event concerns (the actor may be someone else, or nobody).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("user"),
    )
    action = models.CharField(max_length=32, choices=AuditAction.choices, verbose_name=_("action"))
    # Never a credential: field names, statuses, secret ids and hints only.
    detail = models.JSONField(default=dict, blank=True, verbose_name=_("detail"))
    created = models.DateTimeField(default=timezone.now, db_index=True, verbose_name=_("created"))

    class Meta:
        verbose_name_plural = _("audit events")
        ordering = ["-created", "-id"]
        verbose_name = _("audit event")
        indexes = [models.Index(fields=["client", "-created"])]

    def __str__(self):
        return f"{self.get_action_display()} · {self.client_id}"

    def sentence(self) -> str:
        """The event as a sentence an administrator reads in the audit trail, instead of its JSON."""
        # In the administrator's language; what was typed (a reason), names and scopes as they are.
        who = self.actor.get_username() if self.actor_id and self.actor else gettext("The system")
        user = self.user.get_username() if self.user_id and self.user else gettext("a user")
        detail = self.detail or {}

        def listed(key: str) -> str:
            values = detail.get(key) or []
            # Field names read as words ("website url"); scope names stay as written (BOOKING_READ).
            words = key in ("changed", "because")
            return ", ".join(str(value).replace("_", " ") if words else str(value) for value in values) or gettext(
                "nothing"
            )

        def created() -> str:
            if detail.get("kind") == ClientKind.RESOURCE_SERVER:
                return gettext("%(who)s registered the resource server (introspection only).") % {"who": who}
            # The kind as a word of the reader's language; a value this version does not know, as stored.
            kind = detail.get("kind")
            kind = KIND_WORDS[kind] if kind in KIND_WORDS else (kind or gettext("unknown kind"))
            if detail.get("legacy"):
                return gettext("%(who)s registered the client (%(kind)s, legacy) with scopes %(scopes)s.") % {
                    "who": who,
                    "kind": kind,
                    "scopes": listed("scopes"),
                }
            return gettext("%(who)s registered the client (%(kind)s) with scopes %(scopes)s.") % {
                "who": who,
                "kind": kind,
                "scopes": listed("scopes"),
            }

        def counts(*keys: str) -> dict:
            return {key: detail.get(key, 0) for key in keys}

        sentences = {
            AuditAction.CLIENT_CREATED: created,
            AuditAction.CLIENT_UPDATED: lambda: (
                gettext("%(who)s edited %(fields)s.") % {"who": who, "fields": listed("changed")}
            ),
            AuditAction.CLIENT_SCOPES_SET: lambda: (
                gettext("%(who)s set the scopes to %(scopes)s.") % {"who": who, "scopes": listed("scopes")}
            ),
            AuditAction.CLIENT_RESUBMITTED: lambda: (
                gettext("The client went back to review because of %(fields)s.") % {"fields": listed("because")}
            ),
            AuditAction.CLIENT_APPROVED: lambda: gettext("%(who)s approved the client.") % {"who": who},
            AuditAction.CLIENT_REJECTED: lambda: (
                gettext("%(who)s rejected the client: “%(reason)s”") % {"who": who, "reason": detail.get("reason", "")}
            ),
            AuditAction.CLIENT_DELETED: lambda: (
                gettext(
                    "%(who)s deleted the client; %(revoked_refresh_tokens)s refresh tokens and "
                    "%(revoked_access_tokens)s access tokens were revoked."
                )
                % {"who": who, **counts("revoked_refresh_tokens", "revoked_access_tokens")}
            ),
            AuditAction.SECRET_CREATED: lambda: (
                gettext("%(who)s created a secret (it starts with %(hint)s).")
                % {"who": who, "hint": detail.get("hint", "")}
            ),
            AuditAction.SECRET_REVOKED: lambda: (
                gettext("%(who)s revoked the secret that starts with %(hint)s.")
                % {"who": who, "hint": detail.get("hint", "")}
            ),
            AuditAction.GRANT_AUTHORIZED: lambda: (
                gettext("%(user)s authorized the app with full access.") % {"user": user}
                if detail.get("unrestricted")
                else gettext("%(user)s authorized the app for %(scopes)s.") % {"user": user, "scopes": listed("scopes")}
            ),
            AuditAction.GRANT_DENIED: lambda: gettext("%(user)s denied the app.") % {"user": user},
            AuditAction.ACCESS_REVOKED: lambda: gettext("%(user)s revoked the app's access.") % {"user": user},
            AuditAction.USER_DEACTIVATED: lambda: (
                gettext(
                    "%(user)s was deactivated; %(revoked_refresh_tokens)s refresh tokens, %(revoked_access_tokens)s "
                    "access tokens and %(revoked_codes)s unexchanged codes of this app ended."
                )
                % {"user": user, **counts("revoked_refresh_tokens", "revoked_access_tokens", "revoked_codes")}
            ),
            AuditAction.CLIENT_SELF_REGISTERED: lambda: (
                gettext("The client registered itself (%(source)s, %(kind)s) as %(status)s with scopes %(scopes)s.")
                % {
                    "source": detail.get("source", "dcr"),
                    "kind": detail.get("kind", gettext("unknown kind")),
                    "status": detail.get("status", "unverified"),
                    "scopes": listed("scopes"),
                }
            ),
            AuditAction.CLIENT_UNUSED_REMOVED: lambda: (
                gettext("The system removed the self-registered client: nobody authorized it within %(days)s days.")
                % {"days": detail.get("days", "?")}
            ),
            AuditAction.EXCHANGE_TARGETS_SET: lambda: (
                gettext("%(who)s allowed token exchange toward %(targets)s.")
                % {"who": who, "targets": listed("targets")}
                if detail.get("targets")
                else gettext("%(who)s allowed token exchange toward nothing.") % {"who": who}
            ),
            AuditAction.REGISTRATION_TOKEN_ISSUED: lambda: (
                (
                    gettext("%(who)s issued a registration access token; the previous one no longer works.")
                    if detail.get("replaced")
                    else gettext("%(who)s issued a registration access token.")
                )
                % {"who": who}
            ),
            AuditAction.FAMILY_REVOKED: lambda: (
                (
                    gettext("An authorization code was replayed for %(user)s; its token family was revoked.")
                    if "code" in detail.get("reason", "")
                    else gettext("A refresh token was replayed for %(user)s; its token family was revoked.")
                )
                % {"user": user}
            ),
        }
        make = sentences.get(self.action)
        return make() if make else f"{self.get_action_display()}."
