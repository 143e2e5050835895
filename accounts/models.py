"""Upstream identity providers, and the audit trail of account events that concern no client."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class AccountAuditAction(models.TextChoices):
    SECOND_FACTOR_ADDED = "second_factor_added", _("Second factor added")
    SECOND_FACTOR_REMOVED = "second_factor_removed", _("Second factor removed")
    RECOVERY_CODES_REGENERATED = "recovery_codes_regenerated", _("Recovery codes regenerated")
    IDENTITY_PROVIDER_ADDED = "identity_provider_added", _("Identity provider added")
    IDENTITY_PROVIDER_CHANGED = "identity_provider_changed", _("Identity provider changed")
    IDENTITY_PROVIDER_REMOVED = "identity_provider_removed", _("Identity provider removed")
    UPSTREAM_ACCOUNT_CREATED = "upstream_account_created", _("Account created from an identity provider")
    UPSTREAM_ACCOUNT_LINKED = "upstream_account_linked", _("Identity provider linked by authoritative email")
    UPSTREAM_LINK_REFUSED = "upstream_link_refused", _("Identity provider sign-in refused (email of another account)")
    UNPROVEN_ADDRESS_RELEASED = (
        "unproven_address_released",
        _("Email address nobody proved given to the person an identity provider vouches for"),
    )
    # The value predates passkeys; each use of the break-glass is one, password or passkey (detail: method).
    SUPERUSER_PASSWORD_LOGIN = (
        "superuser_password_login",
        _("Superuser signed in here, not through the enforced provider (break-glass)"),
    )
    ENFORCED_STEP_REFUSED = (
        "enforced_step_refused",
        _("Refused: a change that would free an account from its organization's provider"),
    )
    SIGNED_OUT_EVERYWHERE = "signed_out_everywhere", _("Signed out everywhere")
    ASSERTIONS_ALLOWED = "assertions_allowed", _("Identity provider allowed to assert for a client (ID-JAG)")
    ASSERTIONS_DENIED = "assertions_denied", _("Identity provider no longer allowed to assert for a client")
    ASSERTION_GRANTED = "assertion_granted", _("Access granted by an identity provider's assertion (ID-JAG)")
    # Users, groups, email addresses, someone's second factors and upstream links (accounts.admin_audit).
    ADMIN_ADDED = "admin_added", _("Added in the admin")
    ADMIN_CHANGED = "admin_changed", _("Changed in the admin")
    ADMIN_DELETED = "admin_deleted", _("Deleted in the admin")


class AccountAuditEvent(models.Model):
    """Who did what to which account or identity provider, and when. Written with the change."""

    created = models.DateTimeField(auto_now_add=True, db_index=True, verbose_name=_("created"))
    action = models.CharField(max_length=40, choices=AccountAuditAction.choices, verbose_name=_("action"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("actor"),
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    detail = models.JSONField(default=dict, blank=True, verbose_name=_("detail"))  # ids, names, domains: never a secret

    class Meta:
        verbose_name = _("account audit event")
        verbose_name_plural = _("account audit events")
        ordering = ["-created", "-pk"]

    def __str__(self):
        return f"{self.get_action_display()} at {self.created:%Y-%m-%d %H:%M}"


class SelfSignup(models.Model):
    """An account its owner made at /accounts/signup/ (OAUTH_SIGNUP=open). It signs in only once it
    has proved an address (ACCOUNT_EMAIL_VERIFICATION "mandatory", accounts.stages): a sign-up then
    answers alike for an address that has an account and one that has none (allauth's enumeration
    prevention). Accounts made otherwise (by an administrator, `createsuperuser`, `seed_demo`, an
    identity provider) have no row, and sign in as before."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Self sign-up of {self.user_id}"


class IdentityProvider(models.Model):
    """An upstream OpenID Connect provider people sign in through (allauth's openid_connect provider).

    Accounts made from it are linked by (this provider, the ID token's `sub`); `slug` names it in
    allauth's URLs and in that link, and `issuer` cannot change afterwards (remove and add instead),
    so that one link always means one issuer.
    """

    slug = models.SlugField(max_length=40, unique=True, verbose_name=_("slug"))
    name = models.CharField(max_length=80, verbose_name=_("name"))
    issuer = models.URLField(max_length=300, unique=True, verbose_name=_("issuer"))
    client_id = models.CharField(max_length=300, verbose_name=_("client ID"))
    # Sealed under the signing keys' key-encryption key (signing.keys.secret_seal): never
    # shown again after it is entered, not in the admin, not in `identityprovider list`.
    client_secret_sealed = models.TextField(editable=False)
    # Domains this provider is authoritative for (lower case): an email at one of them, verified by
    # the provider, may link to an existing account; `enforce` makes it the only way in for them.
    domains = models.JSONField(default=list, blank=True, verbose_name=_("domains"))
    enforce = models.BooleanField(default=False, verbose_name=_("enforce"))
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    class Meta:
        verbose_name = _("identity provider")
        verbose_name_plural = _("identity providers")
        ordering = ["name"]

    def __str__(self):
        return f"{self.name} ({self.issuer})"


class AssertionPolicy(models.Model):
    """An organization's identity provider may assert (ID-JAG, RFC 7523 JWT bearer grant) that its
    people may use `client`, up to `scopes` (empty: the client's own scopes), with no consent page:
    the organization decided (MCP Enterprise-Managed Authorization; oauthflows.token.idjag). Only
    administrators write these rows (accounts.services, audited)."""

    provider = models.ForeignKey(
        IdentityProvider,
        on_delete=models.CASCADE,
        related_name="assertion_policies",
        verbose_name=_("identity provider"),
    )
    client = models.ForeignKey(
        "oauthclients.OAuthClient", on_delete=models.CASCADE, related_name="+", verbose_name=_("client")
    )
    scopes = models.JSONField(default=list, blank=True, verbose_name=_("scopes"))
    created = models.DateTimeField(auto_now_add=True, verbose_name=_("created"))

    class Meta:
        verbose_name = _("assertion policy")
        verbose_name_plural = _("assertion policies")
        constraints = [models.UniqueConstraint(fields=["provider", "client"], name="assertion_policy_once")]

    def __str__(self):
        return f"{self.provider} may assert for {self.client_id}"


class AssertionUse(models.Model):
    """An ID-JAG's `jti`, kept until the assertion expires: each is accepted once (RFC 7523 §3)."""

    issuer = models.CharField(max_length=300)
    jti_digest = models.CharField(max_length=64)
    expires = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "jti_digest"], name="assertion_jti_once")]

    def __str__(self):
        return f"An assertion of {self.issuer}, until {self.expires:%Y-%m-%d %H:%M:%S}"
