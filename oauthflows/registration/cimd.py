"""Client ID metadata documents (the IETF OAuth working group's draft, adopted by MCP).

An agent may present an https URL as its `client_id`: this server fetches the JSON document at
that URL, and the document (whose `client_id` must equal the URL) is the client's registration.
The client is public (`none`) and lands in the unverified tier, like a dynamic registration.

The fetch is django-oauth-toolkit's `SafeMetadataFetcher` (oauth2_provider.cimd): https only; the
host's resolved addresses must all be public (no loopback, private, link-local, multicast or
reserved ranges, embedded IPv4 in IPv6 decoded), and the connection goes to the address that was
checked (no second DNS lookup); no redirects; a size cap. We add: 5 KB and 5 s (settings
.OAUTH2_PROVIDER's CIMD_*), the reason of a refusal for the error page, and
`OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK=1` (development and tests only), which also allows
plain-http documents on 127.0.0.1, localhost and [::1] — nothing else loosens.

We also wrap two things of DOT's that do not hold under gunicorn (docs/agents.md, "What we wrap
in django-oauth-toolkit"; both can go once DOT fixes them):

- One deadline for the whole fetch, on a monotonic clock. DOT's urllib3 `Timeout(total=…)` bounds
  each socket read, not their sum: a server that sends one byte a second keeps DOT's fetch alive
  until gunicorn kills the worker. `_Deadline` watches every socket the fetch connects (DOT's pool
  class is swapped for ours in DOT's module only, `_Urllib3WithDeadline`) and shuts them down when
  the deadline passes, wherever the fetch is blocked: TLS handshake, headers or body. DNS
  resolution is not interruptible and is bounded by the resolver's own timeouts.
- Fetches in flight are bounded across the whole server (plumbing.slots, where the rate limits
  count), not per process as DOT's semaphore: OAUTH_CLIENT_METADATA_MAX_FETCHES, each slot
  expiring by itself shortly after the deadline, so that a killed worker frees its slot.

It runs at the authorization endpoint, where a client is first seen (a token request for a client
never seen has no code to exchange). DOT's own hook in `_load_application` stays off
(CIMD_ENABLED false) because it would create the client through DOT's model code, outside the
registry's rules. A refusal is an error page (400) that never redirects: the redirect URI comes
from the document that failed. Failures (a missed deadline included) back off per URL (DOT's
backoff); past the cap of fetches in flight the page says to try again, at once.
"""

import contextlib
import contextvars
import ipaddress
import logging
import socket
import threading
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
from oauthflows.registration.dynamic import RegistrationError, metadata_validate
from plumbing.observe import metadata_document_fetch
from plumbing.slots import slot_taken
from scopes.loopback import is_loopback_host

log = logging.getLogger(__name__)

# A fetch slot outlives the fetch's deadline by this much before it frees itself (a worker killed
# mid-fetch never gives it back); it covers the DNS lookups, which the deadline cannot cut short.
SLOT_GRACE_SECONDS = 5


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
    # By host name (scopes.loopback), and never with user information, which the host name hides.
    return (
        parts.scheme == "http"
        and is_loopback_host(parts.hostname)
        and parts.username is None
        and parts.password is None
        and bool(parts.path)
    )


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


class _Deadline:
    """One deadline for a whole fetch: at `seconds` (monotonic) every socket the fetch connected is
    shut down, which ends a blocked connect-to-TLS-to-body read at once (as an error or an early
    end of stream, both refusals). Each socket is watched through a dup() of it, so that a closed
    and reused file descriptor can never be shut down by mistake."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.passed = False
        self._lock = threading.Lock()
        self._watched: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if self.passed:  # connected after the deadline: no time left for it
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                return
            self._watched.append(sock.dup())

    def missed(self) -> bool:
        return self.passed or time.monotonic() >= self.ends

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            for sock in self._watched:
                with contextlib.suppress(OSError):  # already closed by the other side
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._watched:
                sock.close()
            self._watched.clear()


_current_deadline: contextvars.ContextVar[_Deadline | None] = contextvars.ContextVar("cimd_deadline", default=None)


class _WatchedConnection:
    """urllib3 connection mixin: the fetch's deadline watches each socket as soon as it connects
    (before TLS), so that the handshake is bounded too."""

    def _new_conn(self):
        sock = super()._new_conn()
        deadline = _current_deadline.get()
        if deadline is not None:
            deadline.watch(sock)
        return sock


class _HTTPConnection(_WatchedConnection, urllib3.connection.HTTPConnection):
    pass


class _HTTPSConnection(_WatchedConnection, urllib3.connection.HTTPSConnection):
    pass


class _HTTPConnectionPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSConnectionPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class _Urllib3WithDeadline:
    """urllib3 as DOT's fetcher sees it (its module global `urllib3`, in oauth2_provider.cimd only):
    the same, but its https pools' sockets are watched by the fetch's deadline. DOT's fetch code,
    with its SSRF checks, runs unchanged; nothing else in the process is affected."""

    HTTPSConnectionPool = _HTTPSConnectionPool

    def __getattr__(self, name):
        return getattr(urllib3, name)


dot_cimd.urllib3 = _Urllib3WithDeadline()


class MetadataFetcher(dot_cimd.SafeMetadataFetcher):
    """DOT's SSRF-hardened fetcher under one deadline, plus plain http on loopback when the setting
    allows it."""

    def fetch(self, client_id):
        seconds = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        deadline = _Deadline(seconds)
        token = _current_deadline.set(deadline)
        try:
            result = self._fetch(client_id)
        except Exception:
            if deadline.missed():
                raise dot_cimd.CIMDError(f"could not fetch client_id document within {seconds} s") from None
            raise
        finally:
            _current_deadline.reset(token)
            deadline.close()
        # A body cut short by the deadline can still parse (a close-delimited one): refuse it too.
        if deadline.missed():
            raise dot_cimd.CIMDError(f"could not fetch client_id document within {seconds} s")
        return result

    def _fetch(self, client_id):
        if not (loopback_allowed() and _loopback_url(client_id)):
            _refuse_multicast_and_reserved(client_id)
            return super().fetch(client_id)
        parts = urlsplit(client_id)
        if parts.username or parts.password or parts.fragment:
            raise dot_cimd.CIMDError("client_id URL must not contain userinfo or a fragment")
        timeout = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        host = parts.hostname
        pool = _HTTPConnectionPool(
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
    seconds = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
    with slot_taken(
        pool="cimd-fetch", size=settings.OAUTH_CLIENT_METADATA_MAX_FETCHES, lifetime=seconds + SLOT_GRACE_SECONDS
    ) as acquired:
        if not acquired:
            log.warning(
                "Client ID metadata document not fetched: %s fetches in flight",
                settings.OAUTH_CLIENT_METADATA_MAX_FETCHES,
            )
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
