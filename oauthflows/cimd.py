"""Client ID metadata documents (the IETF OAuth working group's draft, adopted by MCP).

An agent may present an https URL as its `client_id`: this server fetches the JSON document at
that URL, and the document (whose `client_id` must equal the URL) is the client's registration.
The client is public (`none`) and lands in the unverified tier, like a dynamic registration.

The fetch is django-oauth-toolkit's `SafeMetadataFetcher` (oauth2_provider.cimd): https only; the
host's resolved addresses must all be public (no loopback, private, link-local, multicast or
reserved ranges, embedded IPv4 in IPv6 decoded), and the connection goes to the address that was
checked (no second DNS lookup); no redirects; a size cap and one deadline for the whole fetch. We
add only: 5 KB and 5 s (settings.OAUTH2_PROVIDER's CIMD_*), the reason of a refusal for the error
page, and `OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK=1` (development and tests only), which also allows
plain-http documents on 127.0.0.1, localhost and [::1] — nothing else loosens.

It runs at the authorization endpoint, where a client is first seen (a token request for a client
never seen has no code to exchange). DOT's own hook in `_load_application` stays off
(CIMD_ENABLED false) because it would create the client through DOT's model code, outside the
registry's rules. A refusal is an error page (400) that never redirects: the redirect URI comes
from the document that failed. Failures back off per URL, and concurrent fetches are capped
(DOT's backoff and in-flight slots).
"""

import ipaddress
import logging
import socket
import time
from datetime import timedelta
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from oauth2_provider import cimd as dot_cimd
from oauth2_provider.settings import oauth2_settings

from oauthclients.models import ClientStatus, OAuthClient
from oauthclients.services import client_document_refresh, client_self_register
from oauthflows.registration import RegistrationError, metadata_validate
from plumbing.observe import metadata_document_fetch

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class MetadataDocumentError(Exception):
    """Why a client ID metadata document was refused; the message is shown on the error page."""


def is_metadata_document_url(client_id: str) -> bool:
    """Whether this client_id is to be resolved as a metadata document URL (cheap, no I/O)."""
    if dot_cimd.is_cimd_client_id(client_id):
        return True
    return loopback_allowed() and _loopback_url(client_id)


def loopback_allowed() -> bool:
    return bool(getattr(settings, "OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK", False))


def _loopback_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - an out-of-range port raises
    except ValueError:
        return False
    return parts.scheme == "http" and parts.netloc.rpartition(":")[0] in LOOPBACK_HOSTS and bool(parts.path)


def _refuse_multicast_and_reserved(client_id: str) -> None:
    """DOT's public-address test is `ipaddress.is_global`, which counts multicast (224.0.0.0/4,
    ff00::/8) as global; refuse those, and reserved ranges, before DOT resolves and connects."""
    parts = dot_cimd._validate_client_id_url(client_id)
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise dot_cimd.CIMDError(f"could not resolve client_id host: {exc}") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if address.is_multicast or address.is_reserved or address.is_unspecified:
            raise dot_cimd.CIMDError(f"client_id host resolves to a non-public address ({address})")


class MetadataFetcher(dot_cimd.SafeMetadataFetcher):
    """DOT's SSRF-hardened fetcher, plus plain http on loopback when the setting allows it."""

    def fetch(self, client_id):
        if not (loopback_allowed() and _loopback_url(client_id)):
            _refuse_multicast_and_reserved(client_id)
            return super().fetch(client_id)
        parts = urlsplit(client_id)
        if parts.username or parts.password or parts.fragment:
            raise dot_cimd.CIMDError("client_id URL must not contain userinfo or a fragment")
        timeout = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        host = parts.hostname
        pool = urllib3.HTTPConnectionPool(
            host=host,
            port=parts.port or 80,
            timeout=urllib3.Timeout(connect=timeout, read=timeout, total=timeout),
            retries=False,
            maxsize=1,
        )
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            response = pool.urlopen(
                "GET",
                path,
                headers={"Host": parts.netloc, "Accept": "application/json"},
                redirect=False,
                preload_content=False,
            )
            try:
                return self._read_document(response)
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise dot_cimd.CIMDError(f"could not fetch client_id document: {exc}") from exc
        finally:
            pool.close()


def _fields(client_id: str, document: dict) -> dict:
    """The document as client_self_register's arguments, with the draft's rules on top of RFC 7591's."""
    if document.get("client_id") != client_id:
        raise MetadataDocumentError("The document's client_id is not the URL it was fetched from.")
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise MetadataDocumentError("A client ID metadata document cannot carry a client secret.")
    if document.get("token_endpoint_auth_method", "none") != "none":
        raise MetadataDocumentError("A client ID metadata document client is public: token_endpoint_auth_method none.")
    try:
        return metadata_validate({**document, "token_endpoint_auth_method": "none"})
    except RegistrationError as exc:
        raise MetadataDocumentError(f"The document's metadata is invalid: {exc.description}") from None


def _fetch(client_id: str) -> tuple[dict, int]:
    if not dot_cimd._registration_permitted(None, client_id):
        raise MetadataDocumentError("This server does not accept client ID metadata documents from this host.")
    backoff_key = dot_cimd._backoff_cache_key(client_id)
    if cache.get(backoff_key):
        metadata_document_fetch.send(sender=None, phase="skipped", outcome="backoff")
        raise MetadataDocumentError("The document could not be fetched a moment ago; try again in a minute.")
    with dot_cimd._fetch_slot() as acquired:
        if not acquired:
            metadata_document_fetch.send(sender=None, phase="skipped", outcome="busy")
            raise MetadataDocumentError("Too many client ID metadata documents are being fetched; try again.")
        started = time.monotonic()
        metadata_document_fetch.send(sender=None, phase="started")
        outcome = "error"
        try:
            fetched = MetadataFetcher().fetch(client_id)
            outcome = "fetched"
            return fetched
        except dot_cimd.CIMDError as exc:
            outcome = "refused"
            cache.set(backoff_key, True, oauth2_settings.CIMD_FAILURE_BACKOFF_SECONDS)
            log.info("Client ID metadata document refused after %.2fs: %s", time.monotonic() - started, exc)
            raise MetadataDocumentError(f"The client ID metadata document could not be used: {exc}.") from None
        except Exception:
            cache.set(backoff_key, True, oauth2_settings.CIMD_FAILURE_BACKOFF_SECONDS)
            log.exception("Unexpected error fetching a client ID metadata document")
            raise MetadataDocumentError("The client ID metadata document could not be fetched.") from None
        finally:
            metadata_document_fetch.send(sender=None, phase="finished", outcome=outcome)


def metadata_document_client(client_id: str, existing: OAuthClient | None) -> OAuthClient:
    """The client for a metadata document URL: fetched and registered on first sight, fetched
    again once its cache age has passed (while it is still unverified; an approved client keeps
    what was approved). Raises MetadataDocumentError."""
    now = timezone.now()
    if existing is not None and (
        existing.status != ClientStatus.UNVERIFIED or (existing.cimd_expires_at and existing.cimd_expires_at > now)
    ):
        return existing
    if len(client_id) > 255:
        raise MetadataDocumentError("A client_id URL can be at most 255 characters.")
    document, max_age = _fetch(client_id)
    fields = _fields(client_id, document)
    expires = now + timedelta(seconds=max_age)
    if existing is not None:
        return _refreshed(existing, fields, expires)
    try:
        with transaction.atomic():
            created = client_self_register(
                source=OAuthClient.RegistrationSource.CIMD, client_id=client_id, **fields
            ).client
    except ValidationError as exc:
        raise MetadataDocumentError(
            "The document's metadata is invalid: " + "; ".join(" ".join(m) for m in exc.message_dict.values())
        ) from None
    except IntegrityError:  # a concurrent first sight registered it
        created = OAuthClient.objects.get(client_id=client_id)
    OAuthClient.objects.filter(pk=created.pk).update(cimd_expires_at=expires)
    created.cimd_expires_at = expires
    return created


def _refreshed(client: OAuthClient, fields: dict, expires) -> OAuthClient:
    try:
        return client_document_refresh(client=client, expires=expires, **fields)
    except ValidationError as exc:
        raise MetadataDocumentError(
            "The document's metadata is invalid: " + "; ".join(" ".join(m) for m in exc.message_dict.values())
        ) from None
