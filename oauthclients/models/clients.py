"""The registry's clients: DOT's Application swapped for OAuthClient, their secrets, their web
origins, the exchange targets an administrator allows a resource server (RFC 8693), and what
users are shown of a client."""

import hashlib
import hmac
import json
from dataclasses import dataclass

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from oauth2_provider.models import AbstractApplication, ApplicationManager

from oauthclients.algorithms import SIGNING_ALGORITHMS
from oauthclients.policy import ClientStatus, Door, client_may_act
from oauthclients.validators import (
    MAX_LINK_URL_LENGTH,
    MAX_URI_LENGTH,
    NAME_SKELETON_LENGTH,
    is_private_use_redirect,
    loopback_ip_redirect_without_port,
    name_skeleton,
)
from scopes.catalog import sort_scopes


def digest(value: str) -> str:
    """SHA-256 hex digest of a high-entropy credential (secret, code, token).

    These values carry 256 bits from `secrets`; a slow password hash would add CPU, not safety.
    """
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


# The review states and what each lets a client do: oauthclients.policy (ClientStatus and
# AUTHORIZABLE_STATUSES are named from here too, `from oauthclients.models import ClientStatus`).


class ClientKind(models.TextChoices):
    CONFIDENTIAL = AbstractApplication.CLIENT_CONFIDENTIAL, _("Confidential (server-side, has a secret)")
    PUBLIC = AbstractApplication.CLIENT_PUBLIC, _("Public (browser or mobile, uses PKCE)")
    # An API service that verifies bearer tokens by introspection (RFC 7662); made by administrators
    # only. It has secrets but no grants, redirect URIs, scopes or users of its own.
    RESOURCE_SERVER = "resource_server", _("Resource server (introspects tokens)")


# The kinds a developer can register: applications that act for users.
APP_KINDS = (ClientKind.CONFIDENTIAL, ClientKind.PUBLIC)
# The longest web origin CORS looks up (scheme, a 253-character host, a port): longer is nobody's.
MAX_ORIGIN_LENGTH = 300
APP_KIND_CHOICES = [(kind.value, kind.label) for kind in APP_KINDS]


class TokenFormat(models.TextChoices):
    """What a resource server receives (docs/verifying-tokens.md): opaque tokens it introspects, or
    RFC 9068 JWTs it verifies itself (scopes.jwt) and learns their revocation from a status list."""

    OPAQUE = "opaque", _("Opaque (introspection)")
    JWT = "jwt", _("JWT (RFC 9068, verified by the resource server)")


@dataclass(frozen=True)
class ShownClient:
    """A client as users see it (OAuthClient.shown): the approved presentation."""

    name: str
    website_url: str
    privacy_policy_url: str
    terms_url: str
    logo_url: str
    purpose: str = ""

    @property
    def has_logo(self) -> bool:
        return bool(self.logo_url)


# The ID token signatures a client may ask for: those of SIGNING_ALGORITHMS, the OpenID Connect
# default (RS256) first. A new algorithm without a label here fails at import (KeyError).
_ID_TOKEN_LABELS = {"RS256": "RS256 (RSA, the OpenID Connect default)", "ES256": "ES256 (ECDSA P-256)"}
IdTokenAlgorithm = models.TextChoices(
    "IdTokenAlgorithm", [(alg, (alg, _ID_TOKEN_LABELS[alg])) for alg in sorted(SIGNING_ALGORITHMS, reverse=True)]
)


class OAuthClient(AbstractApplication):
    """A third-party application registered by a developer (spec §2.1)."""

    # DOT's `user` is the owner: the developer who registered the client.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="oauth_clients",
        verbose_name=_("owner"),
    )
    client_type = models.CharField(max_length=32, choices=ClientKind.choices, verbose_name=_("kind"))
    authorization_grant_type = models.CharField(
        max_length=44,
        choices=AbstractApplication.GRANT_TYPES,
        default=AbstractApplication.GRANT_AUTHORIZATION_CODE,
        editable=False,
    )
    # Secrets live in ClientSecret (one or two, digests only); DOT's single hashed column stays empty.
    client_secret = models.CharField(max_length=255, blank=True, default="", editable=False)
    # OpenID Connect RP-Initiated Logout §3.1 and RFC 7591's metadata of the same name: where an
    # app may send the browser after logout besides its redirect URIs. Reviewed like them
    # (presentation(), the approval's digest); space-separated, as DOT's column always was.
    post_logout_redirect_uris = models.TextField(
        blank=True,
        default="",
        verbose_name=_("post-logout redirect URIs"),
        help_text=_("Where the app may send users after logging them out (besides its redirect URIs)."),
    )
    hash_client_secret = models.BooleanField(default=False, editable=False)

    purpose = models.TextField(
        blank=True, verbose_name=_("purpose"), help_text=_("What the application does with the access it asks for.")
    )
    website_url = models.URLField(max_length=MAX_LINK_URL_LENGTH, verbose_name=_("website URL"))
    privacy_policy_url = models.URLField(
        max_length=MAX_LINK_URL_LENGTH, blank=True, default="", verbose_name=_("privacy policy URL")
    )
    terms_url = models.URLField(
        max_length=MAX_LINK_URL_LENGTH, blank=True, default="", verbose_name=_("terms of service URL")
    )
    # The developer's upload, validated and re-encoded to a small PNG (validators.logo_reencode),
    # served from this origin by views.client_logo: a consent page never loads a third-party image.
    logo_png = models.BinaryField(null=True, blank=True, editable=False)
    logo_updated_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Space-separated scope names in catalog order; empty only for a legacy client.
    scopes = models.TextField(blank=True, default="")
    is_legacy = models.BooleanField(
        default=False,
        verbose_name=_("legacy"),
        help_text=_("Created before scopes existed: no scopes, tokens unrestricted."),
    )

    status = models.CharField(
        max_length=16, choices=ClientStatus.choices, default=ClientStatus.PENDING, verbose_name=_("status")
    )
    rejection_reason = models.TextField(blank=True, default="", verbose_name=_("rejection reason"))
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("reviewed by"),
    )
    reviewed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("reviewed at"))
    # What users were shown when an administrator last approved it, to show what changed since;
    # users are shown this (and the approved logo) until the next approval (SECURITY.md, "Review").
    approved_snapshot = models.JSONField(default=dict, blank=True, editable=False)
    approved_logo_png = models.BinaryField(null=True, blank=True, editable=False)
    # A resource server's RFC 8707 resource URI: the audience its tokens are bound to (docs/agents.md).
    resource_uri = models.CharField(
        max_length=MAX_URI_LENGTH,
        blank=True,
        default="",
        verbose_name=_("resource URI"),
        help_text=_("Resource servers only: the URI apps name in `resource` (RFC 8707) to get tokens for it."),
    )
    # Resource servers only: the format of the access tokens whose audience is this resource URI.
    token_format = models.CharField(
        max_length=8,
        choices=TokenFormat.choices,
        default=TokenFormat.OPAQUE,
        verbose_name=_("token format"),
        help_text=_(
            "Resource servers only: JWT access tokens (RFC 9068) it verifies itself, or opaque ones it introspects."
        ),
    )
    # A self-registered client's RFC 7591 metadata that has no column of its own (contacts,
    # software_id and _version, logo_uri: kept and returned, never fetched or shown).
    registration_metadata = models.JSONField(default=dict, blank=True, editable=False)
    # RFC 7592 §1.2: the digest of the registration access token that lets an RFC 7591 client
    # read, update and delete its registration (empty: none issued); rotated on each update.
    registration_token_digest = models.CharField(max_length=64, blank=True, default="", editable=False)
    # Deleted by its owner: kept (rejected, tokens revoked) so that its audit trail survives.
    deleted_at = models.DateTimeField(null=True, blank=True, editable=False)
    # OpenID Connect: how this client's ID tokens are signed (the name is OpenID Connect Dynamic
    # Registration's). DOT's own `algorithm` column stays empty: its RS256 reads a PEM setting and
    # its HS256 a plain client secret, neither of which exists here (docs/openid-connect.md).
    id_token_signed_response_alg = models.CharField(
        max_length=8,
        choices=IdTokenAlgorithm.choices,
        default=IdTokenAlgorithm.RS256,
        verbose_name=_("ID token algorithm"),
        help_text=_("How ID tokens for this client are signed: RS256 (the OpenID Connect default) or ES256."),
    )

    # The name as users read it (validators.name_skeleton, UTS #39): an unverified client named like
    # a verified one is found with one indexed lookup (selectors.verified_name_like). Set by save().
    name_skeleton = models.CharField(max_length=NAME_SKELETON_LENGTH, blank=True, default="", editable=False)

    # DOT's own columns, relabelled: DOT's catalogue does not cover every language served here.
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))
    updated = models.DateTimeField(auto_now=True, verbose_name=_("updated"))

    objects = ApplicationManager()

    class Meta(AbstractApplication.Meta):
        verbose_name = _("OAuth client")
        verbose_name_plural = _("OAuth clients")
        ordering = ["-created"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ClientStatus.values), name="oauthclient_status_valid"),
            models.CheckConstraint(condition=Q(client_type__in=ClientKind.values), name="oauthclient_kind_valid"),
            # JWT access tokens are a resource server's choice (signing.jwtokens).
            models.CheckConstraint(
                condition=Q(token_format="opaque")
                | Q(client_type="resource_server", token_format__in=TokenFormat.values),
                name="oauthclient_token_format_valid",
            ),
            # Spec §2.1: a scoped client has at least one scope; only a legacy client (or a resource
            # server, which is granted nothing) has none.
            models.CheckConstraint(
                condition=Q(is_legacy=True) | ~Q(scopes="") | Q(client_type="resource_server"),
                name="oauthclient_scopes_unless_legacy",
            ),
            models.CheckConstraint(
                condition=~Q(client_type="resource_server") | (Q(scopes="") & Q(redirect_uris="") & Q(is_legacy=False)),
                name="oauthclient_resource_server_grants_nothing",
            ),
            models.CheckConstraint(
                condition=Q(is_legacy=False) | Q(scopes=""), name="oauthclient_legacy_has_no_scopes"
            ),
            models.CheckConstraint(
                condition=Q(client_type="resource_server") | Q(resource_uri=""),
                name="oauthclient_resource_uri_only_for_resource_servers",
            ),
            models.UniqueConstraint(
                fields=["resource_uri"], condition=~Q(resource_uri=""), name="oauthclient_resource_uri_unique"
            ),
            models.CheckConstraint(
                condition=Q(id_token_signed_response_alg__in=IdTokenAlgorithm.values),
                name="oauthclient_id_token_alg_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["status"]),
            models.Index(fields=["user", "-created"]),
            # One plain b-tree (db_index would add a LIKE index on PostgreSQL that nothing uses).
            models.Index(fields=["name_skeleton"], name="oauthclient_name_skeleton"),
        ]

    def natural_key(self):
        return (self.client_id,)

    def save(self, *args, **kwargs):
        # Derived from `name` alone, on every write of it, so it cannot fall behind the name.
        self.name_skeleton = name_skeleton(self.name)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "name" in update_fields:
            kwargs["update_fields"] = {*update_fields, "name_skeleton"}
        super().save(*args, **kwargs)

    def get_absolute_url(self):
        # DOT's points at its own application pages, which this project does not mount.
        return reverse("developer:client_detail", args=[self.client_id])

    @property
    def owner(self):
        return self.user

    @property
    def redirect_uri_list(self) -> list[str]:
        return self.redirect_uris.split()

    @property
    def post_logout_redirect_uri_list(self) -> list[str]:
        return self.post_logout_redirect_uris.split()

    @property
    def post_logout_redirect_uri_choices(self) -> list[str]:
        """What RP-initiated logout accepts as post_logout_redirect_uri: the redirect URIs and the
        post-logout redirect URIs, exact strings (both reviewed with the client)."""
        extra = self.post_logout_redirect_uri_list
        if self.status == ClientStatus.APPROVED:
            # Only those the approval covered: a value written behind the review's back (a bulk
            # update, DOT's column as it was) sends nobody anywhere.
            reviewed = (self.approved_snapshot or {}).get("post_logout_redirect_uris") or []
            extra = [uri for uri in extra if uri in reviewed]
        return self.redirect_uri_list + extra

    @property
    def scope_list(self) -> list[str]:
        return self.scopes.split()

    @property
    def has_logo(self) -> bool:
        return self.logo_updated_at is not None

    @property
    def current_logo_url(self) -> str:
        """The logo as uploaded, for its owner's pages only (users see the approved one: `shown`)."""
        if not self.has_logo:
            return ""
        version = int(self.logo_updated_at.timestamp())
        return reverse("developer:client_logo", args=[self.client_id]) + f"?v={version}"

    @property
    def can_be_authorized(self) -> bool:
        """Whether users may be sent to authorize it: approved (or unverified, within the ceiling),
        not deleted, an app (not a resource server): oauthclients.policy, for nobody in particular."""
        return client_may_act(self, None, Door.AUTHORIZE)

    @property
    def is_unverified(self) -> bool:
        return self.status == ClientStatus.UNVERIFIED

    @property
    def is_self_registered(self) -> bool:
        return self.registration_source != self.RegistrationSource.MANUAL

    @property
    def registration_client_uri(self) -> str:
        """RFC 7592 §3: where an RFC 7591 client reads, updates and deletes its registration."""
        return f"{settings.OAUTH_ISSUER}{settings.OAUTH_REGISTRATION_PATH}/{self.client_id}"

    @property
    def owner_preview(self) -> "ShownClient":
        """The client as it is now, for its owner testing it before review (their own words)."""
        return ShownClient(
            name=self.name,
            website_url=self.website_url,
            privacy_policy_url=self.privacy_policy_url,
            terms_url=self.terms_url,
            logo_url=self.current_logo_url,
            purpose=self.purpose,
        )

    @property
    def shown(self) -> "ShownClient":
        """What users are shown of the client: the version an administrator last approved.

        An approved client's edits that change what users see send it back to review, so until the
        next approval users keep seeing the approved name, website, policies and logo (Connected
        apps, the login page). Never approved: its current values (only its owner can reach it).
        """
        approved = self.approved_snapshot or {}

        def pick(field: str) -> str:
            return approved.get(field, getattr(self, field)) if approved else getattr(self, field)

        logo_version = approved.get("logo", "") if approved else ""
        logo_url = ""
        if logo_version and self.can_be_authorized:
            version = hashlib.sha256(logo_version.encode()).hexdigest()[:12]
            logo_url = reverse("client_logo", args=[self.client_id]) + f"?v={version}"
        return ShownClient(
            name=pick("name"),
            website_url=pick("website_url"),
            privacy_policy_url=pick("privacy_policy_url"),
            terms_url=pick("terms_url"),
            logo_url=logo_url,
            purpose=pick("purpose"),
        )

    def presentation(self) -> dict:
        """What a user is shown about the client on the consent screen; compared across approvals."""
        return {
            "name": self.name,
            "website_url": self.website_url,
            "privacy_policy_url": self.privacy_policy_url,
            "terms_url": self.terms_url,
            "logo": self.logo_updated_at.isoformat() if self.logo_updated_at else "",
            "purpose": self.purpose,
            "redirect_uris": self.redirect_uri_list,
            "post_logout_redirect_uris": self.post_logout_redirect_uri_list,
            "scopes": self.scope_list,
        }

    def review_digest(self) -> str:
        """A digest of everything an approval covers (SECURITY.md: an approval applies only to the
        version the reviewer saw): what users are shown, where codes go, what may be asked, the kind.

        The confirmation page and `oauthclient show` carry it; `client_approve` refuses, under the
        row lock, a client whose digest has changed since.
        """
        covered = {
            **self.presentation(),
            "kind": self.client_type,
            "legacy": self.is_legacy,
        }
        return hashlib.sha256(json.dumps(covered, sort_keys=True).encode("utf-8")).hexdigest()

    def changes_since_approval(self) -> list[str] | None:
        """What users would see differently since an administrator last approved it (None: never approved)."""
        before = self.approved_snapshot
        if not before:
            return None
        after = self.presentation()
        labels = {
            "name": _("Name"),
            "website_url": _("Website"),
            "privacy_policy_url": _("Privacy policy URL"),
            "terms_url": _("Terms of service URL"),
            "purpose": _("Purpose"),
        }
        none = gettext("(none)")
        changes = [
            # Translators: a field's change since the last approval, e.g. "Website: https://a → https://b".
            gettext("%(label)s: %(before)s → %(after)s")
            % {"label": label, "before": before.get(field) or none, "after": after[field] or none}
            for field, label in labels.items()
            # A snapshot taken before the purpose was part of it says nothing about the purpose.
            if (field in before or field != "purpose") and before.get(field, "") != after[field]
        ]
        if before.get("logo", "") != after["logo"]:
            changes.append(gettext("Logo: removed") if not after["logo"] else gettext("Logo: a new image was uploaded"))
        for field, added, removed in (
            ("redirect_uris", _("Added redirect URI %(value)s"), _("Removed redirect URI %(value)s")),
            (
                "post_logout_redirect_uris",
                _("Added post-logout redirect URI %(value)s"),
                _("Removed post-logout redirect URI %(value)s"),
            ),
            ("scopes", _("Added scope %(value)s"), _("Removed scope %(value)s")),
        ):
            old, new = set(before.get(field, [])), set(after[field])
            changes += [str(added) % {"value": value} for value in sorted(new - old)]
            changes += [str(removed) % {"value": value} for value in sorted(old - new)]
        return changes

    @property
    def is_confidential(self) -> bool:
        return self.client_type == ClientKind.CONFIDENTIAL

    @property
    def is_resource_server(self) -> bool:
        return self.client_type == ClientKind.RESOURCE_SERVER

    @property
    def is_approved(self) -> bool:
        return self.status == ClientStatus.APPROVED

    def set_scope_list(self, names) -> None:
        self.scopes = " ".join(sort_scopes(names))

    def redirect_uri_allowed(self, uri: str) -> bool:
        # SECURITY.md: exact string match, no prefix/case/port/path/query/userinfo tolerance...
        registered = self.redirect_uri_list
        if uri in registered:
            return True
        # ...except the port of a loopback IP literal: RFC 8252 §7.3 says any port must match, as
        # a native app listens on whatever port the system gives it. Not for "localhost" (§8.3).
        presented = loopback_ip_redirect_without_port(uri)
        return presented is not None and any(loopback_ip_redirect_without_port(r) == presented for r in registered)

    def allows_grant_type(self, *grant_types) -> bool:
        # A resource server may only introspect: every grant is unauthorized_client (RFC 6749 §5.2).
        return not self.is_resource_server and super().allows_grant_type(*grant_types)

    def get_allowed_schemes(self):
        # DOT's clean() checks schemes; a native app's private-use schemes are its own (RFC 8252 §7.1).
        private = {uri.partition(":")[0] for uri in self.redirect_uri_list if is_private_use_redirect(uri)}
        return ["https", "http", *sorted(private)]

    @property
    def jwk_key(self):
        """Never used: DOT reaches its model's jwk_key only from `finalize_id_token` and
        `_get_key_for_token`, which oauthflows.token.oauth2.Validator overrides to sign with the key
        store. Refusing here keeps DOT's fallback (OIDC_RSA_PRIVATE_KEY, or the client secret for
        HS256) from ever signing, without the models importing the key store."""
        raise NotImplementedError("ID tokens are signed by the key store (oauthflows.token.oauth2.Validator)")

    def is_usable(self, request) -> bool:
        """DOT asks this before issuing codes and tokens (oauthclients.policy decides).

        At the token, revocation and introspection endpoints the validator marks the request
        (`pending_client_may_authenticate`): a pending client authenticates there, and what it
        redeems is held to its owner's own grants (policy's GRANT door, asked by the validator).
        At the authorization endpoint the consent view marks it (`pending_owner_preview`) after
        checking the signed-in user, who must be a pending client's owner. Both marks are the
        Python object True, which no request parameter can be.
        """
        if getattr(request, "pending_client_may_authenticate", None) is True:
            return client_may_act(self, None, Door.CLIENT_AUTHENTICATION)
        user = getattr(request, "user", None) if getattr(request, "pending_owner_preview", None) is True else None
        return client_may_act(self, user, Door.AUTHORIZE)


class ClientSecret(models.Model):
    """One secret of a confidential client; the value is shown once and kept only as a digest."""

    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="secrets")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    hint = models.CharField(max_length=16, editable=False, help_text=_("The first characters, to tell secrets apart."))
    created = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("client secret")
        verbose_name_plural = _("client secrets")
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["client", "revoked_at"])]

    def __str__(self):
        return f"Secret {self.hint}… of {self.client_id}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def matches(self, provided: str) -> bool:
        return hmac.compare_digest(self.digest, digest(provided))


class ClientOrigin(models.Model):
    """A web origin (RFC 6454) of a redirect URI of a public client that users may authorize
    (approved or unverified, not deleted): the one thing a CORS decision asks, by an indexed
    lookup of that origin (oauthflows.cors), never by reading every client's redirect URIs.

    Written only by oauthclients.services (`_client_origins_sync`), in the transaction that changes
    the client's redirect URIs, kind or review state; `approved` copies the state, so that the
    origins of the approved clients alone are one index range too.
    """

    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="web_origins")
    origin = models.CharField(max_length=MAX_ORIGIN_LENGTH)
    approved = models.BooleanField()

    class Meta:
        verbose_name = _("web origin")
        verbose_name_plural = _("web origins")
        constraints = [models.UniqueConstraint(fields=["client", "origin"], name="clientorigin_once_per_client")]
        indexes = [models.Index(fields=["origin", "approved"], name="clientorigin_origin_approved")]

    def __str__(self):
        return f"{self.origin} ({self.client_id})"


class ExchangeTarget(models.Model):
    """RFC 8693: a downstream resource server toward which a resource server may exchange the
    tokens it receives (oauthflows.token.exchange). Only administrators write these rows
    (oauthclients.exchangetargets.client_exchange_targets_set, audited)."""

    client = models.ForeignKey(
        OAuthClient, on_delete=models.CASCADE, related_name="exchange_targets", verbose_name=_("client")
    )
    target = models.ForeignKey(
        OAuthClient, on_delete=models.CASCADE, related_name="exchange_sources", verbose_name=_("target")
    )
    created = models.DateTimeField(default=timezone.now, editable=False, verbose_name=_("created"))

    class Meta:
        verbose_name = _("exchange target")
        verbose_name_plural = _("exchange targets")
        constraints = [models.UniqueConstraint(fields=["client", "target"], name="exchange_target_once")]

    def __str__(self):
        return f"Token exchange from {self.client_id} toward {self.target_id}"
