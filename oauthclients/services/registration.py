"""A client that registered itself: RFC 7591 registration and its RFC 7592 management (the
registration access token), client ID metadata documents, and the removal of registrations nobody used."""

import secrets
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext

from oauthclients.exceptions import InvalidTransition
from oauthclients.models import (
    AuditAction,
    ClientAuditEvent,
    ClientKind,
    ClientStatus,
    IdTokenAlgorithm,
    OAuthClient,
    digest,
)
from oauthclients.services.clients import ClientCreated, _apply_edit, _client_retire, _field_value, client_delete
from oauthclients.services.fields import _audit, _clean_fields, _client_origins_sync, _lock, _validated_new_client
from oauthclients.services.secrets import _new_secret


def _registration_token_new(client: OAuthClient) -> str:
    """A new RFC 7592 registration access token for `client` (its digest set, not saved)."""
    token = secrets.token_urlsafe(32)
    client.registration_token_digest = digest(token)
    return token


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
