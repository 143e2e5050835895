"""Every state change of a client: atomic, row-locked, audited in the same transaction."""

import hmac
import secrets
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator, URLValidator
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext

from oauthclients.audit import audit_record
from oauthclients.emails import review_email_send
from oauthclients.exceptions import (
    ClientKindError,
    InvalidTransition,
    LastSecretError,
    ReviewOutdated,
    SecretLimitReached,
    SecretNotFound,
)
from oauthclients.grants import GrantsEnded, grants_end
from oauthclients.models import (
    APP_KINDS,
    AUTHORIZABLE_STATUSES,
    MAX_ORIGIN_LENGTH,
    AuditAction,
    ClientAuditEvent,
    ClientKind,
    ClientOrigin,
    ClientSecret,
    ClientStatus,
    IdTokenAlgorithm,
    OAuthClient,
    TokenFormat,
    digest,
)
from oauthclients.validators import (
    MAX_LINK_URL_LENGTH,
    has_bidi_control,
    has_line_break_or_control,
    invisible_characters,
    logo_reencode,
    mixed_script_host,
    name_skeleton,
    validate_optional_url,
    validate_redirect_uris,
    validate_resource_uri,
    validate_scope_names,
    web_origin,
)

MAX_ACTIVE_SECRETS = 2
SECRET_PREFIX = "cs_"
SECRET_HINT_LENGTH = len(SECRET_PREFIX) + 4
MAX_NAME_LENGTH = 100
MAX_PURPOSE_LENGTH = 2000
MAX_REJECTION_REASON_LENGTH = 2000
PURPOSE_REQUIRED = "Say what the application does with the access it asks for: reviewers read this."
LOOKALIKE_URL = (
    "This address mixes alphabets in its host name or holds bidirectional control characters, as "
    "look-alike addresses do (раураl.com for paypal.com). Use the plain address of your site."
)


@dataclass(frozen=True)
class IssuedSecret:
    """A freshly made secret: `plaintext` exists only here, to be shown once and dropped."""

    secret: ClientSecret
    # Kept out of repr() so that a logged object or a traceback cannot show the secret (STYLE §8).
    plaintext: str = dataclass_field(repr=False)


@dataclass(frozen=True)
class ClientCreated:
    client: OAuthClient
    secret: IssuedSecret | None
    # RFC 7592 §1.2, for an RFC 7591 registration: returned once, stored as a digest.
    registration_token: str | None = dataclass_field(default=None, repr=False)


def _registration_token_new(client: OAuthClient) -> str:
    """A new RFC 7592 registration access token for `client` (its digest set, not saved)."""
    token = secrets.token_urlsafe(32)
    client.registration_token_digest = digest(token)
    return token


_audit = audit_record


def _lock(client: OAuthClient) -> OAuthClient:
    """Re-read the client under a row lock; the caller's copy may be stale."""
    return OAuthClient.objects.select_for_update().get(pk=client.pk)


def _clean_text(
    value: str,
    *,
    field: str,
    label: str,
    max_length: int,
    required: bool,
    single_line: bool = False,
    visible_only: bool = False,
) -> str:
    value = (value or "").strip()
    if has_bidi_control(value):
        # They reorder what a user reads: "ppA dooG" displayed as "Good App" (SECURITY.md, "Review").
        raise ValidationError({field: f"{label} cannot contain bidirectional control characters."})
    if visible_only and (invisible := invisible_characters(value)):
        # Shown as nothing or a blank, yet counted: "Google\u3164Calendar" reads as a verified app's
        # name while being another string (validators.invisible_characters).
        raise ValidationError(
            {
                field: f"{label} cannot contain invisible or blank-looking characters ({', '.join(invisible)}): "
                "they make a name read like another one."
            }
        )
    if single_line and has_line_break_or_control(value):
        # The name goes into email headers (the review mail's subject): CR/LF there would be
        # header injection, and Django refuses such a header at send time, after the review.
        raise ValidationError({field: f"{label} must be a single line, without control characters."})
    if required and not value:
        raise ValidationError({field: PURPOSE_REQUIRED if field == "purpose" else f"{label} is required."})
    if len(value) > max_length:
        raise ValidationError({field: f"{label} can be at most {max_length} characters."})
    if "\x00" in value:
        raise ValidationError({field: f"{label} cannot contain NUL characters."})
    return value


def _clean_website(website_url, cleaned: dict, errors: dict) -> None:
    try:
        website_url = (website_url or "").strip()
        # PostgreSQL cannot store NUL in text; refuse it here rather than fail on save.
        ProhibitNullCharactersValidator()(website_url)
        URLValidator(schemes=["http", "https"])(website_url)
        if len(website_url) > MAX_LINK_URL_LENGTH:
            raise ValidationError(f"The website URL can be at most {MAX_LINK_URL_LENGTH} characters.")
        cleaned["website_url"] = website_url
    except ValidationError:
        errors["website_url"] = ["Enter the application's website as an http(s) URL."]
    else:
        if has_bidi_control(website_url) or mixed_script_host(website_url):
            errors["website_url"] = [LOOKALIKE_URL]


def _clean_fields(
    *,
    name,
    purpose,
    website_url,
    redirect_uris,
    scopes,
    is_legacy,
    privacy_policy_url="",
    terms_url="",
    logo: bytes | None = None,
    website_required: bool = True,
    purpose_required: bool = True,
    post_logout_redirect_uris=(),
) -> dict:
    """Validate everything a client is made of; report every field's problem at once.

    A client a person registers (the developer page, the admin, the command) says what it is for:
    reviewers and users read its purpose. A self-registered client says no such thing (RFC 7591 has
    no purpose) and may have no website (`client_uri` is optional).
    """
    errors: dict[str, list] = {}
    cleaned: dict = {}
    for field, label, value in (
        ("privacy_policy_url", "privacy policy", privacy_policy_url),
        ("terms_url", "terms of service", terms_url),
    ):
        try:
            cleaned[field] = validate_optional_url(value, label=label)
        except ValidationError as exc:
            errors[field] = exc.messages
    cleaned["logo_png"] = None
    if logo is not None:
        try:
            cleaned["logo_png"] = logo_reencode(logo)
        except ValidationError as exc:
            errors["logo"] = exc.messages
    for field, label, value, max_length, required in (
        ("name", "Name", name, MAX_NAME_LENGTH, True),
        ("purpose", "Purpose", purpose, MAX_PURPOSE_LENGTH, purpose_required),
    ):
        try:
            cleaned[field] = _clean_text(
                value,
                field=field,
                label=label,
                max_length=max_length,
                required=required,
                single_line=field == "name",
                visible_only=field == "name",
            )
        except ValidationError as exc:
            errors.update(exc.message_dict)
    if website_required or (website_url or "").strip():
        _clean_website(website_url, cleaned, errors)
    else:
        cleaned["website_url"] = ""
    try:
        cleaned["redirect_uris"] = validate_redirect_uris(list(redirect_uris))
    except ValidationError as exc:
        errors["redirect_uris"] = exc.messages
    cleaned["post_logout_redirect_uris"] = []
    if post_logout_redirect_uris:
        # OpenID Connect RP-Initiated Logout §3.1: the same rules as redirect URIs (they are where
        # users are sent), none required.
        try:
            cleaned["post_logout_redirect_uris"] = validate_redirect_uris(list(post_logout_redirect_uris))
        except ValidationError as exc:
            errors["post_logout_redirect_uris"] = exc.messages
    if is_legacy:
        if scopes:
            errors["scopes"] = ["A legacy client has no scopes; select scopes later to migrate it."]
        cleaned["scopes"] = []
    else:
        try:
            cleaned["scopes"] = validate_scope_names(list(scopes))
        except ValidationError as exc:
            errors["scopes"] = exc.messages
    if errors:
        raise ValidationError(errors)
    return cleaned


def _validated_new_client(kind: str, clean) -> dict:
    """The cleaned fields of a new app client (`clean()`: _clean_fields with its arguments), with
    a kind that is not an app's reported beside every field's problem, all at once."""
    errors: dict[str, list] = {}
    if kind not in APP_KINDS:
        # Resource servers have their own service (resource_server_create): they get no grants.
        errors["client_type"] = [f"Kind must be one of: {', '.join(APP_KINDS)}."]
    try:
        cleaned = clean()
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    return cleaned


def _client_origins_sync(client: OAuthClient, *, created: bool = False) -> None:
    """The client's ClientOrigin rows, rewritten from what it is now; every service that saves a
    client's redirect URIs, review state or deletion calls it in its transaction (oauthflows.cors).

    Only a public client that users may authorize (approved or unverified, not deleted) has rows:
    a confidential client's pages never hold its secret, and a pending or rejected client's redirect
    URIs are usable by nobody else, so their origins read nothing.
    """
    if not created:
        ClientOrigin.objects.filter(client=client).delete()
    if (
        client.client_type != ClientKind.PUBLIC
        or client.deleted_at is not None
        or client.status not in AUTHORIZABLE_STATUSES
    ):
        return
    origins = {origin for origin in map(web_origin, client.redirect_uri_list) if origin}
    approved = client.status == ClientStatus.APPROVED
    ClientOrigin.objects.bulk_create(
        [
            ClientOrigin(client=client, origin=origin, approved=approved)
            for origin in sorted(origins)
            if len(origin) <= MAX_ORIGIN_LENGTH
        ]
    )


def _new_secret(*, client: OAuthClient, actor) -> IssuedSecret:
    # 256 bits from `secrets`; stored as a SHA-256 digest plus a short non-secret hint.
    plaintext = SECRET_PREFIX + secrets.token_urlsafe(32)
    secret = ClientSecret.objects.create(
        client=client,
        digest=digest(plaintext),
        hint=plaintext[:SECRET_HINT_LENGTH],
        created_by=actor if getattr(actor, "pk", None) else None,
    )
    _audit(client=client, actor=actor, action=AuditAction.SECRET_CREATED, secret_id=secret.pk, hint=secret.hint)
    return IssuedSecret(secret=secret, plaintext=plaintext)


@transaction.atomic
def client_create(
    *,
    owner,
    name: str,
    website_url: str,
    kind: str,
    redirect_uris: list[str],
    scopes: list[str],
    purpose: str = "",
    privacy_policy_url: str = "",
    terms_url: str = "",
    logo: bytes | None = None,
    is_legacy: bool = False,
    approve: bool = False,
    actor=None,
    post_logout_redirect_uris: list[str] = (),
) -> ClientCreated:
    """Register a client (pending); a confidential one gets its first secret, returned once."""
    cleaned = _validated_new_client(
        kind,
        partial(
            _clean_fields,
            name=name,
            purpose=purpose,
            website_url=website_url,
            redirect_uris=redirect_uris,
            scopes=scopes,
            is_legacy=is_legacy,
            privacy_policy_url=privacy_policy_url,
            terms_url=terms_url,
            logo=logo,
            post_logout_redirect_uris=post_logout_redirect_uris,
        ),
    )
    # The registration is the owner's doing unless someone else (an administrator) is named;
    # an approval is only ever recorded against the actor actually given, never the owner.
    creator = actor or owner
    client = OAuthClient(
        user=owner,
        name=cleaned["name"],
        purpose=cleaned["purpose"],
        website_url=cleaned["website_url"],
        privacy_policy_url=cleaned["privacy_policy_url"],
        terms_url=cleaned["terms_url"],
        logo_png=cleaned["logo_png"],
        logo_updated_at=timezone.now() if cleaned["logo_png"] else None,
        client_type=kind,
        redirect_uris=" ".join(cleaned["redirect_uris"]),
        post_logout_redirect_uris=" ".join(cleaned["post_logout_redirect_uris"]),
        is_legacy=is_legacy,
    )
    client.set_scope_list(cleaned["scopes"])
    client.save()
    _client_origins_sync(client, created=True)
    _audit(
        client=client,
        actor=creator,
        action=AuditAction.CLIENT_CREATED,
        kind=kind,
        legacy=is_legacy,
        scopes=client.scope_list,
        redirect_uris=client.redirect_uri_list,
    )
    issued = _new_secret(client=client, actor=creator) if kind == ClientKind.CONFIDENTIAL else None
    if approve:
        client = client_approve(client=client, actor=actor)
    return ClientCreated(client=client, secret=issued)


def self_registered_owner():
    """The owner recorded on self-registered clients: an inactive account that cannot log in, so
    nobody gets an owner's powers (the pending preview, the developer pages) over them."""
    User = get_user_model()
    owner, created = User.objects.get_or_create(
        username=settings.OAUTH_SELF_REGISTERED_OWNER, defaults={"is_active": False}
    )
    if created:
        owner.set_unusable_password()
        owner.save(update_fields=["password"])
    return owner


def _clean_self_registered(
    *, name, website_url, redirect_uris, scopes, privacy_policy_url, terms_url, post_logout_redirect_uris=()
) -> dict:
    """The registry's rules for what a client says about itself: no purpose, no logo, website optional."""
    return _clean_fields(
        name=name,
        purpose="",
        website_url=website_url,
        redirect_uris=redirect_uris,
        scopes=scopes,
        is_legacy=False,
        privacy_policy_url=privacy_policy_url,
        terms_url=terms_url,
        website_required=False,
        purpose_required=False,
        post_logout_redirect_uris=post_logout_redirect_uris,
    )


@transaction.atomic
def client_self_register(
    *,
    name: str,
    kind: str,
    redirect_uris: list[str],
    scopes: list[str],
    source: str,
    website_url: str = "",
    privacy_policy_url: str = "",
    terms_url: str = "",
    metadata: dict | None = None,
    client_id: str | None = None,
    id_token_signed_response_alg: str = IdTokenAlgorithm.RS256,
    post_logout_redirect_uris: list[str] = (),
    registration_token: bool = False,
) -> ClientCreated:
    """A client that registered itself (RFC 7591, or a client ID metadata document): no owner of
    its own, *unverified* (any user may authorize it within settings.OAUTH_UNVERIFIED_SCOPES,
    oauthclients.tier) or, with OAUTH_DYNAMIC_REGISTRATION=pending, pending (usable by nobody
    until an administrator approves it). A confidential one gets its secret, returned once."""
    cleaned = _validated_new_client(
        kind,
        partial(
            _clean_self_registered,
            name=name,
            website_url=website_url,
            redirect_uris=redirect_uris,
            scopes=scopes,
            privacy_policy_url=privacy_policy_url,
            terms_url=terms_url,
            post_logout_redirect_uris=post_logout_redirect_uris,
        ),
    )
    status = ClientStatus.PENDING if settings.OAUTH_DYNAMIC_REGISTRATION == "pending" else ClientStatus.UNVERIFIED
    client = OAuthClient(
        user=self_registered_owner(),
        name=cleaned["name"],
        website_url=cleaned["website_url"],
        privacy_policy_url=cleaned["privacy_policy_url"],
        terms_url=cleaned["terms_url"],
        client_type=kind,
        redirect_uris=" ".join(cleaned["redirect_uris"]),
        post_logout_redirect_uris=" ".join(cleaned["post_logout_redirect_uris"]),
        status=status,
        registration_source=source,
        registration_metadata=metadata or {},
        id_token_signed_response_alg=id_token_signed_response_alg,
    )
    if client_id is not None:
        client.client_id = client_id
    client.set_scope_list(cleaned["scopes"])
    token = _registration_token_new(client) if registration_token else None
    client.save(force_insert=True)
    _client_origins_sync(client, created=True)
    _audit(
        client=client,
        actor=None,
        action=AuditAction.CLIENT_SELF_REGISTERED,
        source=source,
        kind=kind,
        status=status,
        scopes=client.scope_list,
        redirect_uris=client.redirect_uri_list,
    )
    issued = _new_secret(client=client, actor=None) if kind == ClientKind.CONFIDENTIAL else None
    return ClientCreated(client=client, secret=issued, registration_token=token)


@transaction.atomic
def client_document_refresh(
    *,
    client: OAuthClient,
    name: str,
    kind: str,
    redirect_uris: list[str],
    scopes: list[str],
    expires,
    website_url: str = "",
    privacy_policy_url: str = "",
    terms_url: str = "",
    metadata: dict | None = None,
    id_token_signed_response_alg: str = IdTokenAlgorithm.RS256,
    post_logout_redirect_uris: list[str] = (),
) -> OAuthClient:
    """An unverified client ID metadata document client, fetched again: its registration follows
    the document (the registry's rules, as at registration). An approved one is never changed here."""
    cleaned = _clean_self_registered(
        name=name,
        website_url=website_url,
        redirect_uris=redirect_uris,
        scopes=scopes,
        privacy_policy_url=privacy_policy_url,
        terms_url=terms_url,
        post_logout_redirect_uris=post_logout_redirect_uris,
    )
    client = _lock(client)
    if client.status != ClientStatus.UNVERIFIED:
        return client
    before = {field: _field_value(client, field) for field in _DOCUMENT_FIELDS}
    client.name = cleaned["name"]
    client.website_url = cleaned["website_url"]
    client.privacy_policy_url = cleaned["privacy_policy_url"]
    client.terms_url = cleaned["terms_url"]
    client.redirect_uris = " ".join(cleaned["redirect_uris"])
    client.post_logout_redirect_uris = " ".join(cleaned["post_logout_redirect_uris"])
    client.set_scope_list(cleaned["scopes"])
    client.registration_metadata = metadata or {}
    client.id_token_signed_response_alg = id_token_signed_response_alg
    client.cimd_expires_at = expires
    client.save()
    _client_origins_sync(client)
    changed = [field for field in _DOCUMENT_FIELDS if before[field] != _field_value(client, field)]
    if changed:
        # What users are shown or where codes go changed: recorded like an owner's edit, by nobody.
        _audit(
            client=client,
            actor=None,
            action=AuditAction.CLIENT_UPDATED,
            changed=changed,
            source=client.registration_source,
            scopes=client.scope_list,
            redirect_uris=client.redirect_uri_list,
        )
    return client


# What a client ID metadata document sets, audited when a fetch changes it (client_document_refresh).
_DOCUMENT_FIELDS = (
    "name",
    "website_url",
    "privacy_policy_url",
    "terms_url",
    "redirect_uris",
    "post_logout_redirect_uris",
    "scopes",
)


def client_name_skeletons_refresh() -> int:
    """Store each client's name skeleton again (`manage.py oauthclient name-skeletons`): they come
    from ICU's Unicode data, which an upgrade of the system's ICU changes. A derived column, so no
    audit row. Returns how many changed."""
    changed = []
    for client in OAuthClient.objects.only("pk", "name", "name_skeleton").iterator(chunk_size=2000):
        skeleton = name_skeleton(client.name)
        if skeleton != client.name_skeleton:
            client.name_skeleton = skeleton
            changed.append(client)
    OAuthClient.objects.bulk_update(changed, ["name_skeleton"], batch_size=2000)
    return len(changed)


def _client_retire(client: OAuthClient, *, reason: str, now) -> GrantsEnded:
    """A deletion (by its owner, or of an unused registration): the row is kept, rejected and
    marked deleted, since its audit events belong to it; its secrets and grants end. The caller
    holds the row lock and audits."""
    client.status = ClientStatus.REJECTED
    client.rejection_reason = reason
    client.deleted_at = now
    client.save(update_fields=["status", "rejection_reason", "deleted_at", "updated"])
    _client_origins_sync(client)
    client.secrets.filter(revoked_at__isnull=True).update(revoked_at=now)
    return grants_end(client=client)


def unused_registrations_remove(*, now=None) -> int:
    """Self-registered clients, still unverified or pending, that nobody authorized within
    OAUTH_UNUSED_REGISTRATION_DAYS: deleted (kept as rejected, like an owner's deletion, so the
    audit trail survives), each with an audit entry. Returns how many."""
    now = now or timezone.now()
    days = settings.OAUTH_UNUSED_REGISTRATION_DAYS
    authorized = ClientAuditEvent.objects.filter(client=OuterRef("pk"), action=AuditAction.GRANT_AUTHORIZED)
    candidates = (
        OAuthClient.objects.exclude(registration_source=OAuthClient.RegistrationSource.MANUAL)
        .filter(
            status__in=(ClientStatus.UNVERIFIED, ClientStatus.PENDING),
            deleted_at__isnull=True,
            created__lte=now - timedelta(days=days),
        )
        .filter(~Exists(authorized))
        .values_list("pk", flat=True)
    )
    removed = 0
    for pk in list(candidates[:10_000]):
        with transaction.atomic():
            client = OAuthClient.objects.select_for_update().filter(pk=pk, deleted_at__isnull=True).first()
            if client is None or client.status not in (ClientStatus.UNVERIFIED, ClientStatus.PENDING):
                continue
            ended = _client_retire(
                client, reason=f"Removed: nobody authorized it within {days} days of its registration.", now=now
            )
            _audit(
                client=client,
                actor=None,
                action=AuditAction.CLIENT_UNUSED_REMOVED,
                days=days,
                revoked_codes=ended.codes,
            )
            removed += 1
    return removed


def _token_format_problem(token_format: str, resource_uri: str) -> str | None:
    if token_format not in TokenFormat.values:
        return f"The token format is {' or '.join(TokenFormat.values)}."
    if token_format == TokenFormat.JWT and not resource_uri:
        return "JWT access tokens need a resource URI: they are issued for tokens bound to it (RFC 8707)."
    return None


@transaction.atomic
def resource_server_create(
    *, owner, name: str, resource_uri: str = "", actor=None, token_format: str = TokenFormat.OPAQUE
) -> ClientCreated:
    """Register a resource server (approved at once: only administrators make them) and its first secret.

    It may only introspect tokens (RFC 7662): no redirect URI, no scope, no grant, no review email.
    With a resource URI, apps may ask for tokens bound to it (RFC 8707 `resource`, docs/agents.md).
    """
    cleaned = _clean_text(
        name, field="name", label="Name", max_length=MAX_NAME_LENGTH, required=True, single_line=True, visible_only=True
    )
    problem = _token_format_problem(token_format, resource_uri)
    if problem:
        raise ValidationError({"token_format": [problem]})
    if resource_uri:
        try:
            validate_resource_uri(resource_uri)
        except ValidationError as exc:
            raise ValidationError({"resource_uri": exc.messages}) from None
        if (
            resource_uri == settings.OAUTH_RESOURCE_URI
            or OAuthClient.objects.filter(resource_uri=resource_uri).exists()
        ):
            raise ValidationError({"resource_uri": ["Another resource server already has this resource URI."]})
    creator = actor or owner
    client = OAuthClient.objects.create(
        user=owner,
        name=cleaned,
        website_url="",
        client_type=ClientKind.RESOURCE_SERVER,
        resource_uri=resource_uri,
        token_format=token_format,
        redirect_uris="",
        scopes="",
        status=ClientStatus.APPROVED,
        reviewed_by=actor if getattr(actor, "pk", None) else None,
        reviewed_at=timezone.now(),
    )
    _audit(client=client, actor=creator, action=AuditAction.CLIENT_CREATED, kind=ClientKind.RESOURCE_SERVER)
    _audit(client=client, actor=actor, action=AuditAction.CLIENT_APPROVED)
    return ClientCreated(client=client, secret=_new_secret(client=client, actor=creator))


def _needs_review(client: OAuthClient, *, cleaned: dict) -> list[str]:
    """What in an owner's edit changes what users are shown, where codes go, or widens access."""
    name, website_url = cleaned["name"], cleaned["website_url"]
    redirect_uris, scopes = cleaned["redirect_uris"], cleaned["scopes"]
    reasons = []
    if name != client.name:
        reasons.append("name")
    if website_url != client.website_url:
        reasons.append("website_url")
    # The logo and the policy links are part of the app's identity on the consent screen.
    if cleaned.get("logo_png") is not None or (cleaned.get("logo_remove") and client.has_logo):
        reasons.append("logo")
    for field in ("privacy_policy_url", "terms_url"):
        if field in cleaned and cleaned[field] != getattr(client, field):
            reasons.append(field)
    if not set(redirect_uris) <= set(client.redirect_uri_list):
        reasons.append("redirect_uris")
    # Where users are sent after logout: reviewed like the redirect URIs (presentation()).
    if not set(cleaned.get("post_logout_redirect_uris", client.post_logout_redirect_uri_list)) <= set(
        client.post_logout_redirect_uri_list
    ):
        reasons.append("post_logout_redirect_uris")
    # A legacy client's tokens are unrestricted, so any selection of scopes narrows (spec §5.8).
    if not client.is_legacy and not set(scopes) <= set(client.scope_list):
        reasons.append("scopes")
    return reasons


def _apply_edit(
    client: OAuthClient,
    *,
    actor,
    action: AuditAction,
    cleaned: dict,
    also_changed: tuple[str, ...] = (),
    resubmit_to: ClientStatus = ClientStatus.PENDING,
) -> OAuthClient:
    """Save an edit; approved (or rejected) clients go back to review when `_needs_review` says so.

    `also_changed`: fields the caller changed on `client` itself that review covers (a registered
    logo_uri); `resubmit_to`: the status that review starts from (a self-registered client's tier)."""
    before = {
        "name": client.name,
        "purpose": client.purpose,
        "website_url": client.website_url,
        "privacy_policy_url": client.privacy_policy_url,
        "terms_url": client.terms_url,
        "logo": client.logo_updated_at,
        "redirect_uris": client.redirect_uri_list,
        "post_logout_redirect_uris": client.post_logout_redirect_uri_list,
        "scopes": client.scope_list,
    }
    review_reasons = _needs_review(client, cleaned=cleaned) + list(also_changed)
    was_legacy = client.is_legacy
    client.name = cleaned["name"]
    client.purpose = cleaned["purpose"]
    client.website_url = cleaned["website_url"]
    client.privacy_policy_url = cleaned.get("privacy_policy_url", client.privacy_policy_url)
    client.terms_url = cleaned.get("terms_url", client.terms_url)
    if cleaned.get("logo_png") is not None:
        client.logo_png = cleaned["logo_png"]
        client.logo_updated_at = timezone.now()
    elif cleaned.get("logo_remove") and client.has_logo:
        client.logo_png = None
        client.logo_updated_at = None
    client.redirect_uris = " ".join(cleaned["redirect_uris"])
    if "post_logout_redirect_uris" in cleaned:
        client.post_logout_redirect_uris = " ".join(cleaned["post_logout_redirect_uris"])
    if cleaned["scopes"]:
        client.set_scope_list(cleaned["scopes"])
        client.is_legacy = False
    changed = [field for field, old in before.items() if old != _field_value(client, field)] + list(also_changed)
    if not changed:
        return client

    resubmitted = False
    if client.status == ClientStatus.REJECTED or (client.status == ClientStatus.APPROVED and review_reasons):
        client.status = resubmit_to
        client.rejection_reason = ""
        client.reviewed_by = None
        client.reviewed_at = None
        resubmitted = True
    client.save()
    _client_origins_sync(client)
    _audit(
        client=client,
        actor=actor,
        action=action,
        changed=changed,
        scopes=client.scope_list,
        was_legacy=was_legacy,
    )
    if resubmitted:
        _audit(client=client, actor=actor, action=AuditAction.CLIENT_RESUBMITTED, because=review_reasons or ["edited"])
    return client


def _field_value(client: OAuthClient, field: str):
    if field == "redirect_uris":
        return client.redirect_uri_list
    if field == "post_logout_redirect_uris":
        return client.post_logout_redirect_uri_list
    if field == "scopes":
        return client.scope_list
    if field == "logo":
        return client.logo_updated_at
    return getattr(client, field)


@transaction.atomic
def client_update(
    *,
    client: OAuthClient,
    actor,
    name: str,
    purpose: str,
    website_url: str,
    redirect_uris: list[str],
    scopes: list[str],
    privacy_policy_url: str | None = None,
    terms_url: str | None = None,
    logo: bytes | None = None,
    logo_remove: bool = False,
    post_logout_redirect_uris: list[str] | None = None,
) -> OAuthClient:
    """An owner's edit. Changing what users see or where codes go, or widening access, sends it back to review.

    `privacy_policy_url`, `terms_url` and `post_logout_redirect_uris` left as None keep their
    values; `logo` replaces the logo.
    """
    client = _lock(client)
    # A legacy client may keep no scopes (editing other fields) or select some (migration).
    keep_legacy = client.is_legacy and not scopes
    cleaned = _clean_fields(
        name=name,
        purpose=purpose,
        website_url=website_url,
        redirect_uris=redirect_uris,
        scopes=scopes,
        is_legacy=keep_legacy,
        privacy_policy_url=client.privacy_policy_url if privacy_policy_url is None else privacy_policy_url,
        terms_url=client.terms_url if terms_url is None else terms_url,
        logo=logo,
        post_logout_redirect_uris=client.post_logout_redirect_uri_list
        if post_logout_redirect_uris is None
        else post_logout_redirect_uris,
    )
    cleaned["logo_remove"] = logo_remove
    return _apply_edit(client, actor=actor, action=AuditAction.CLIENT_UPDATED, cleaned=cleaned)


@transaction.atomic
def client_set_scopes(*, client: OAuthClient, scopes: list[str], actor=None) -> OAuthClient:
    """Replace a client's scopes. On a legacy client this is the migration of spec §5.8 step b."""
    client = _lock(client)
    try:
        names = validate_scope_names(list(scopes))
    except ValidationError as exc:
        raise ValidationError({"scopes": exc.messages}) from None
    cleaned = {
        "name": client.name,
        "purpose": client.purpose,
        "website_url": client.website_url,
        "privacy_policy_url": client.privacy_policy_url,
        "terms_url": client.terms_url,
        "redirect_uris": client.redirect_uri_list,
        "scopes": names,
    }
    return _apply_edit(client, actor=actor, action=AuditAction.CLIENT_SCOPES_SET, cleaned=cleaned)


@transaction.atomic
def client_id_token_algorithm_set(*, client: OAuthClient, algorithm: str, actor=None) -> OAuthClient:
    """How the client's ID tokens are signed from now on: RS256 or ES256 (docs/openid-connect.md).
    Nothing users are shown changes, so the review state stays as it is."""
    if algorithm not in IdTokenAlgorithm.values:
        raise ValidationError(
            {"id_token_signed_response_alg": f"ID tokens are signed with {' or '.join(IdTokenAlgorithm.values)}."}
        )
    return _setting_change(client, "id_token_signed_response_alg", algorithm, actor=actor)


def _setting_change(client: OAuthClient, field: str, value: str, *, actor) -> OAuthClient:
    """One column that changes nothing users are shown: set under the row lock, audited if changed."""
    client = _lock(client)
    if getattr(client, field) != value:
        setattr(client, field, value)
        client.save(update_fields=[field, "updated"])
        _audit(client=client, actor=actor, action=AuditAction.CLIENT_UPDATED, changed=[field], **{field: value})
    return client


@transaction.atomic
def resource_server_token_format_set(*, client: OAuthClient, token_format: str, actor=None) -> OAuthClient:
    """The format of the access tokens bound to this resource server from now on (tokens already
    issued keep theirs): JWTs it verifies itself (scopes.jwt), or opaque tokens it introspects.
    Every server process follows within signing.jwtokens.JWT_FORMATS_SECONDS."""
    if client.client_type != ClientKind.RESOURCE_SERVER:
        raise ValidationError({"token_format": ["Only a resource server has a token format."]})
    problem = _token_format_problem(token_format, client.resource_uri)
    if problem:
        raise ValidationError({"token_format": [problem]})
    return _setting_change(client, "token_format", token_format, actor=actor)


def _same_digest(given, actual: str) -> bool:
    # compare_digest refuses non-ASCII text; such input is simply not the digest.
    return isinstance(given, str) and given.isascii() and hmac.compare_digest(given, actual)


@transaction.atomic
def client_approve(*, client: OAuthClient, actor, expected_digest: str | None = None) -> OAuthClient:
    """pending or unverified -> approved. Only administrators call this. An unverified client's
    registered scopes beyond the ceiling become usable; its users' grants stay as they are.

    `expected_digest` is the `review_digest()` of the version the reviewer was shown: if the client
    changed since (its owner edited it meanwhile), nothing is approved. Every review screen passes
    it; only a caller that has just made or read the client in the same transaction may omit it.
    """
    client = _lock(client)
    if client.status not in (ClientStatus.PENDING, ClientStatus.UNVERIFIED):
        raise InvalidTransition(
            f"Only a pending or unverified client can be approved; this one is {client.get_status_display().lower()}."
            + (" The owner must edit and resubmit it first." if client.status == ClientStatus.REJECTED else "")
        )
    if expected_digest is not None and not _same_digest(expected_digest, client.review_digest()):
        raise ReviewOutdated(
            f"{client.name} ({client.client_id}) changed after you reviewed it, so it was not approved. "
            "Review the current version and approve again."
        )
    client.status = ClientStatus.APPROVED
    client.rejection_reason = ""
    client.reviewed_by = actor if getattr(actor, "pk", None) else None
    client.reviewed_at = timezone.now()
    client.approved_snapshot = client.presentation()
    # Users are served this copy of the logo until the next approval, whatever the owner uploads.
    client.approved_logo_png = client.logo_png
    client.save(
        update_fields=[
            "status",
            "rejection_reason",
            "reviewed_by",
            "reviewed_at",
            "approved_snapshot",
            "approved_logo_png",
            "updated",
        ]
    )
    _client_origins_sync(client)
    _audit(client=client, actor=actor, action=AuditAction.CLIENT_APPROVED)
    transaction.on_commit(partial(review_email_send, client_pk=client.pk))
    return client


@transaction.atomic
def client_reject(*, client: OAuthClient, actor, reason: str) -> OAuthClient:
    """pending or approved -> rejected, with a reason. A rejected client's tokens stop working."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Give the owner a reason for the rejection."})
    reason = _clean_text(
        reason, field="reason", label="The reason", max_length=MAX_REJECTION_REASON_LENGTH, required=False
    )
    client = _lock(client)
    if client.status == ClientStatus.REJECTED:
        raise InvalidTransition("This client is already rejected.")
    previous = client.status
    # Rejection ends every grant, so neither a resubmitting edit nor a later approval brings old
    # tokens back: users must consent again.
    ended = grants_end(client=client)
    client.status = ClientStatus.REJECTED
    client.rejection_reason = reason
    client.reviewed_by = actor if getattr(actor, "pk", None) else None
    client.reviewed_at = timezone.now()
    client.save(update_fields=["status", "rejection_reason", "reviewed_by", "reviewed_at", "updated"])
    _client_origins_sync(client)
    _audit(
        client=client,
        actor=actor,
        action=AuditAction.CLIENT_REJECTED,
        reason=reason,
        previous=previous,
        revoked_access_tokens=ended.access_tokens,
        revoked_refresh_tokens=ended.refresh_tokens,
        revoked_codes=ended.codes,
    )
    transaction.on_commit(partial(review_email_send, client_pk=client.pk))
    return client


@transaction.atomic
def client_secret_create(*, client: OAuthClient, actor) -> IssuedSecret:
    """Add a secret while fewer than two are active (spec §3, §5.7 step a)."""
    client = _lock(client)
    if client.client_type == ClientKind.PUBLIC:
        raise ClientKindError("A public client has no secrets; it authenticates with PKCE.")
    active = client.secrets.filter(revoked_at__isnull=True).count()
    if active >= MAX_ACTIVE_SECRETS:
        raise SecretLimitReached(
            f"This client already has {MAX_ACTIVE_SECRETS} active secrets. Revoke one before creating another."
        )
    return _new_secret(client=client, actor=actor)


@transaction.atomic
def client_secret_revoke(*, client: OAuthClient, secret_id: int, actor) -> ClientSecret:
    """Revoke a secret at once, unless it is the last active one (spec §5.7 step c)."""
    client = _lock(client)
    try:
        secret = client.secrets.get(pk=secret_id, revoked_at__isnull=True)
    except (ClientSecret.DoesNotExist, ValueError, TypeError):
        raise SecretNotFound(f"This client has no active secret with id {secret_id}.") from None
    if client.secrets.filter(revoked_at__isnull=True).count() <= 1:
        raise LastSecretError(
            "This is the client's last active secret and cannot be revoked. Create a new secret first."
        )
    secret.revoked_at = timezone.now()
    secret.save(update_fields=["revoked_at"])
    _audit(client=client, actor=actor, action=AuditAction.SECRET_REVOKED, secret_id=secret.pk, hint=secret.hint)
    return secret


@transaction.atomic
def client_delete(*, client: OAuthClient, actor) -> OAuthClient:
    """The owner deletes a client: it stops working at once, every token dies, the audit trail stays.

    The row is kept, rejected and marked deleted, because its audit events belong to it; every
    check that refuses a rejected client (authorize, token, introspection, API) refuses it too.
    """
    client = _lock(client)
    if client.deleted_at is not None:
        raise InvalidTransition("This client is already deleted.")
    previous = client.status
    ended = _client_retire(client, reason="Deleted by its owner.", now=timezone.now())
    _audit(
        client=client,
        actor=actor,
        action=AuditAction.CLIENT_DELETED,
        previous=previous,
        revoked_access_tokens=ended.access_tokens,
        revoked_refresh_tokens=ended.refresh_tokens,
        revoked_codes=ended.codes,
    )
    return client


@dataclass(frozen=True)
class RegistrationUpdated:
    client: OAuthClient
    registration_token: str = dataclass_field(repr=False)  # the new one: the old one no longer works


@transaction.atomic
def client_registration_update(
    *,
    client: OAuthClient,
    name: str,
    kind: str,
    redirect_uris: list[str],
    scopes: list[str],
    website_url: str = "",
    privacy_policy_url: str = "",
    terms_url: str = "",
    metadata: dict | None = None,
    id_token_signed_response_alg: str = IdTokenAlgorithm.RS256,
    post_logout_redirect_uris: list[str] = (),
) -> RegistrationUpdated:
    """RFC 7592 §2.2: an RFC 7591 client replaces its registration, under the registration's rules.

    An approved client that changes what review covers (name, website, policies, redirect URIs,
    scopes, logo_uri) goes back to review, to the tier it registered into (unverified: usable
    within the ceiling until approved again). The registration access token is rotated."""
    client = _lock(client)
    if client.status == ClientStatus.REJECTED or client.registration_source != OAuthClient.RegistrationSource.DCR:
        raise InvalidTransition("Only a registration that is not rejected can be updated.")
    if kind != client.client_type:
        raise ValidationError({"token_endpoint_auth_method": ["cannot change between none and a client secret."]})
    cleaned = _clean_self_registered(
        name=name,
        website_url=website_url,
        redirect_uris=redirect_uris,
        scopes=scopes,
        privacy_policy_url=privacy_policy_url,
        terms_url=terms_url,
        post_logout_redirect_uris=post_logout_redirect_uris,
    )
    cleaned["purpose"] = client.purpose
    metadata = metadata or {}
    before = client.registration_metadata or {}
    also_changed = ("logo_uri",) if metadata.get("logo_uri", "") != before.get("logo_uri", "") else ()
    client.registration_metadata = metadata
    client.id_token_signed_response_alg = id_token_signed_response_alg
    token = _registration_token_new(client)
    tier = ClientStatus.PENDING if settings.OAUTH_DYNAMIC_REGISTRATION == "pending" else ClientStatus.UNVERIFIED
    client = _apply_edit(
        client,
        actor=None,
        action=AuditAction.CLIENT_UPDATED,
        cleaned=cleaned,
        also_changed=also_changed,
        resubmit_to=tier,
    )
    # _apply_edit saves only when a reviewed field changed: the rest (and the token) always.
    client.save(update_fields=["registration_metadata", "id_token_signed_response_alg", "registration_token_digest"])
    return RegistrationUpdated(client=client, registration_token=token)


@dataclass(frozen=True)
class RegistrationTokenIssued:
    client: OAuthClient
    registration_token: str = dataclass_field(repr=False)  # shown once; only its digest is stored
    replaced: bool  # an earlier token existed, and no longer works


@transaction.atomic
def client_registration_token_issue(*, client: OAuthClient, actor) -> RegistrationTokenIssued:
    """An administrator issues an RFC 7591 client a new RFC 7592 registration access token.

    For a client that registered itself before these tokens existed (it has none, and could never
    read, update or delete its registration), or one that lost its token: any earlier one stops
    working. Audited; the token is returned once and stored as a digest."""
    client = _lock(client)
    if client.registration_source != OAuthClient.RegistrationSource.DCR:
        raise InvalidTransition(
            gettext("Only a client that registered itself (RFC 7591) has a registration to manage.")
        )
    if client.status == ClientStatus.REJECTED:
        raise InvalidTransition(gettext("A rejected or deleted client cannot manage its registration."))
    replaced = bool(client.registration_token_digest)
    token = _registration_token_new(client)
    client.save(update_fields=["registration_token_digest"])
    _audit(client=client, actor=actor, action=AuditAction.REGISTRATION_TOKEN_ISSUED, replaced=replaced)
    return RegistrationTokenIssued(client=client, registration_token=token, replaced=replaced)


@transaction.atomic
def client_registration_delete(*, client: OAuthClient) -> OAuthClient:
    """RFC 7592 §2.3: an RFC 7591 client deletes itself; its grants end (client_delete)."""
    client = client_delete(client=client, actor=None)
    client.registration_token_digest = ""
    client.save(update_fields=["registration_token_digest"])
    return client
