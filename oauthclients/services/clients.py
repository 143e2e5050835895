"""A client registered by a person or an administrator: created, edited (back to review when what
users see changes), its settings, deleted (kept as rejected, its grants ended)."""

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from oauthclients.exceptions import InvalidTransition
from oauthclients.grants import GrantsEnded, grants_end
from oauthclients.models import AuditAction, ClientKind, ClientStatus, IdTokenAlgorithm, OAuthClient, TokenFormat
from oauthclients.services.fields import (
    MAX_NAME_LENGTH,
    NAME_LABEL,
    _audit,
    _clean_fields,
    _clean_text,
    _client_origins_sync,
    _lock,
    _validated_new_client,
)
from oauthclients.services.review import client_approve
from oauthclients.services.secrets import IssuedSecret, _new_secret
from oauthclients.validators import name_skeleton, validate_resource_uri, validate_scope_names


@dataclass(frozen=True)
class ClientCreated:
    client: OAuthClient
    secret: IssuedSecret | None
    # RFC 7592 §1.2, for an RFC 7591 registration: returned once, stored as a digest.
    registration_token: str | None = dataclass_field(default=None, repr=False)


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
        name,
        field="name",
        label=NAME_LABEL,
        max_length=MAX_NAME_LENGTH,
        required=True,
        single_line=True,
        visible_only=True,
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


@transaction.atomic
def client_delete(*, client: OAuthClient, actor) -> OAuthClient:
    """The owner deletes a client: it stops working at once, every token dies, the audit trail stays.

    The row is kept, rejected and marked deleted, because its audit events belong to it; every
    check that refuses a rejected client (authorize, token, introspection, API) refuses it too.
    """
    client = _lock(client)
    if client.deleted_at is not None:
        raise InvalidTransition(gettext("This client is already deleted."))
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
