"""Token status lists (draft-ietf-oauth-status-list): how a revocation reaches every resource
server that verifies JWT access tokens itself (scopes.jwt), within the list's `ttl`.

Each JWT access token holds one global index g, handed out in blocks (BLOCK indices per process,
one statement per block: a PostgreSQL sequence, elsewhere a counter row): its bit is bit g % size of
list g // size. A list is a row (`StatusList`) made when the first block reaches it, served signed
at `GET /v2/auth/oauth2/status-lists/<number>` as a `statuslist+jwt`, and deleted once every token
it holds has expired (`status_lists_sweep`, run by `cleartokens_expired`): what is kept and served
stays bounded by the tokens alive, never by the tokens ever issued. Indices are not reused, so a
revoked bit is never cleared for another token.

A set bit (1 = INVALID) is a `StatusRevocation` row, written by the database itself, by three
triggers (`status_triggers_install`), one per rule of what ends a JWT access token:

- its row is gone (an AccessToken DELETE: revocation, rotation, family revocation, connected apps,
  client rejection and deletion, a user's deactivation or deletion, a cascade, raw SQL);
- its user is made inactive (an UPDATE of `is_active`: `save()`, or a bulk `QuerySet.update()` that
  sends no signal);
- its client is rejected (an UPDATE of `status`, however made).

So every path, bulk ones included, sets the bit in the statement that ends the token, and nothing in
Python has to remember to. The triggers are the database's copy of tokens.liveness.token_ended
(but expiry, which the JWT's own `exp` carries): a registered SQL twin (plumbing.handwritten),
compared with it on the same rows by tests/test_sql_twins.py; signing.apps puts them in after
every `migrate`. Why not compute the bits from the live rows when a list is built: a list
of 131,072 live JWTs joined to their users and clients takes about 140 ms to read on PostgreSQL
(measured; 17 ms only to count them), on every fetch, since no cheap query tells whether a user or
a client changed; and an index with no live row may be one a process has reserved but not yet
handed out, or one whose token is still being committed: reading it as revoked would refuse fresh
tokens at every resource server holding the list for up to its ttl. A trigger's INSERT touches no
shared row: revocations never wait for each other. The list's bytes are built from its rows when it
is served, and signed again only when they changed.

Settings: OAUTH_STATUS_LIST_SIZE (131,072 bits, 16 KB raw), OAUTH_STATUS_LIST_TTL (10 seconds: how
long a resource server may keep a list, hence how long a revoked token may still pass there).
"""

import base64
import json
import threading
import time
import zlib
from datetime import timedelta

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections, router, transaction
from django.db.models import Count, F, Max
from django.utils import timezone
from oauth2_provider.settings import oauth2_settings

from oauthclients.models import AccessToken, ClientStatus, OAuthClient
from plumbing.handwritten import sql_twin
from plumbing.observe import status_list_built
from signing.keys import signer_current
from signing.models import StatusCounter, StatusList, StatusRevocation

BLOCK = 256
SEQUENCE = "oauthclients_status_index_seq"


def list_size() -> int:
    return settings.OAUTH_STATUS_LIST_SIZE


def list_ttl() -> int:
    return settings.OAUTH_STATUS_LIST_TTL


def list_uri(number: int) -> str:
    return f"{settings.OAUTH_ISSUER}{settings.OAUTH_STATUS_LIST_PATH}{number}"


# --- handing out indices -------------------------------------------------------------------------


class _Allocator:
    """This process's current block of global indices (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._next = self._end = 0

    def take(self) -> tuple[int, int]:
        """(list number, bit index) for a new JWT access token."""
        size = list_size()
        with self._lock:
            if self._next >= self._end:
                start = _reserve_block()
                self._next, self._end = start, start + BLOCK
                first, last = start // size, (start + BLOCK - 1) // size
                _lists_ensure(range(first, last + 1), size)
            index = self._next
            self._next += 1
        return index // size, index % size

    def forget(self) -> None:
        with self._lock:
            self._next = self._end = 0


allocator = _Allocator()


def _reserve_block() -> int:
    """The first index of a fresh block of BLOCK, in its own statement (and, off PostgreSQL, its
    own short transaction), so that no token transaction holds a lock on it."""
    alias = router.db_for_write(StatusList)
    connection = connections[alias]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT nextval('{SEQUENCE}')")
            return (cursor.fetchone()[0] - 1) * BLOCK
    with transaction.atomic(using=alias):
        counter, _ = StatusCounter.objects.using(alias).select_for_update().get_or_create(pk=1)
        start = counter.next_index
        StatusCounter.objects.using(alias).filter(pk=1).update(next_index=F("next_index") + BLOCK)
        return start


def _lists_ensure(numbers, size: int) -> None:
    now = timezone.now()
    for number in numbers:
        StatusList.objects.get_or_create(number=number, defaults={"size": size})
    StatusList.objects.filter(number__in=list(numbers)).update(last_issued=now)


# --- setting bits: the database's triggers ----------------------------------------------------------

# (trigger name, table model, event, condition, the (status_list, status_index) pairs it revokes).
# The names are kept by `status_triggers_missing` and the deployment check (config.checks).
TRIGGER_TOKEN_GONE = "oauthclients_status_token_gone"
TRIGGER_USER_INACTIVE = "oauthclients_status_user_inactive"
TRIGGER_CLIENT_REJECTED = "oauthclients_status_client_rejected"
TRIGGERS = (TRIGGER_TOKEN_GONE, TRIGGER_USER_INACTIVE, TRIGGER_CLIENT_REJECTED)


@sql_twin(
    mirrors="tokens.liveness.token_ended",
    decides="a JWT access token's status bit: set when its row goes, its user is made inactive, its client rejected",
)
def _trigger_rules(connection) -> list[tuple[str, str, str, str]]:
    quote = connection.ops.quote_name
    access = quote(AccessToken._meta.db_table)
    user_model = get_user_model()

    def column(model, name):
        return quote(model._meta.get_field(name).column)

    indexed = f"{column(AccessToken, 'status_index')} IS NOT NULL"
    pairs = f"{column(AccessToken, 'status_list')}, {column(AccessToken, 'status_index')}"
    status, rejected = column(OAuthClient, "status"), f"'{ClientStatus.REJECTED.value}'"
    return [
        (
            TRIGGER_TOKEN_GONE,
            f"DELETE ON {access}",
            f"OLD.{indexed}",
            f"SELECT OLD.{column(AccessToken, 'status_list')}, OLD.{column(AccessToken, 'status_index')}",
        ),
        (
            TRIGGER_USER_INACTIVE,
            f"UPDATE OF {column(user_model, 'is_active')} ON {quote(user_model._meta.db_table)}",
            f"OLD.{column(user_model, 'is_active')} AND NOT NEW.{column(user_model, 'is_active')}",
            f"SELECT {pairs} FROM {access} WHERE {column(AccessToken, 'user')} = "
            f"NEW.{quote(user_model._meta.pk.column)} AND {indexed}",
        ),
        (
            TRIGGER_CLIENT_REJECTED,
            f"UPDATE OF {status} ON {quote(OAuthClient._meta.db_table)}",
            f"NEW.{status} = {rejected} AND OLD.{status} <> {rejected}",
            f"SELECT {pairs} FROM {access} WHERE {column(AccessToken, 'application')} = "
            f"NEW.{quote(OAuthClient._meta.pk.column)} AND {indexed}",
        ),
    ]


def status_triggers_install(using: str = "default") -> None:
    """Create (or replace) the three triggers that set status bits (module docstring). Idempotent;
    run after every `migrate` (signing.apps), because SQLite drops a table's triggers when a
    migration rebuilds the table."""
    connection = connections[using]
    if AccessToken._meta.db_table not in connection.introspection.table_names():
        return  # migrated back before the tables (migrate oauthclients zero)
    quote = connection.ops.quote_name
    revocations = quote(StatusRevocation._meta.db_table)
    target = f"{revocations} ({quote('status_list')}, {quote('index')})"
    with transaction.atomic(using=using), connection.cursor() as cursor:
        for name, event, condition, pairs in _trigger_rules(connection):
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    f"INSERT INTO {target} {pairs} ON CONFLICT DO NOTHING; RETURN NULL; END $$"
                )
                cursor.execute(
                    f"CREATE OR REPLACE TRIGGER {name} AFTER {event} FOR EACH ROW WHEN ({condition}) "
                    f"EXECUTE FUNCTION {name}()"
                )
            elif connection.vendor == "sqlite":
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
                cursor.execute(
                    f"CREATE TRIGGER {name} AFTER {event} FOR EACH ROW WHEN {condition} "
                    f"BEGIN INSERT OR IGNORE INTO {target} {pairs}; END"
                )
            else:
                raise NotImplementedError(f"status list triggers for {connection.vendor}")


def status_triggers_uninstall(using: str = "default") -> None:
    """Drop the three triggers: before every `migrate` (signing.apps), since SQLite refuses to
    rebuild a table that another table's trigger names (a user or client trigger reads the access
    tokens' table), and a migration may change the columns they read. post_migrate puts them back."""
    connection = connections[using]
    with transaction.atomic(using=using), connection.cursor() as cursor:
        for name, event, _condition, _pairs in _trigger_rules(connection):
            if connection.vendor == "postgresql":
                table = event.rsplit(" ON ", 1)[1]
                cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            elif connection.vendor == "sqlite":
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")


def status_triggers_missing(using: str = "default") -> list[str]:
    """The names of the triggers that are not in this database (none: every rule is in place)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname = ANY(%s)", [list(TRIGGERS)]
            )
        elif connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        else:
            return list(TRIGGERS)
        present = {row[0] for row in cursor.fetchall()}
    return [name for name in TRIGGERS if name not in present]


def status_list_bits(number: int, size: int) -> bytes:
    """The list's bytes: bit i is bit i % 8 (least significant first) of byte i // 8."""
    bits = bytearray(size // 8)
    for index in StatusRevocation.objects.filter(status_list=number, index__lt=size).values_list("index", flat=True):
        bits[index // 8] |= 1 << (index % 8)
    return bytes(bits)


# --- serving -------------------------------------------------------------------------------------

# number -> ((revocations' count, newest row, kid), signed list, made at): signed again only when
# the list or the key changed, or its signature would be older than the ttl.
_signed: dict[int, tuple[tuple, str, float]] = {}
_signed_lock = threading.Lock()


def status_list_token(number: int) -> str | None:
    """The signed `statuslist+jwt` of list `number`, or None when there is no such list. Two
    indexed queries (the list, its revocations' count and newest row); built and signed again only
    when those changed, or when the signature would be older than the ttl."""
    size = StatusList.objects.filter(number=number).values_list("size", flat=True).first()
    if size is None:
        return None
    version = StatusRevocation.objects.filter(status_list=number).aggregate(count=Count("id"), newest=Max("id"))
    signer = signer_current(jwt_signing_algorithm())
    if signer is None:
        raise LookupError("no signing key")
    key, op_key = signer
    version = (version["count"], version["newest"], key.kid)
    now = time.time()
    held = _signed.get(number)
    if held is not None and held[0] == version and now - held[2] < max(1, list_ttl()):
        return held[1]
    issued = int(now)
    claims = {
        "sub": list_uri(number),
        "iat": issued,
        # Within the time its key stays published after retiring (signing.keys).
        "exp": issued + oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS,
        "ttl": list_ttl(),
        "status_list": {"bits": 1, "lst": _b64(zlib.compress(status_list_bits(number, size), 9))},
    }
    token = jws_sign(claims, typ="statuslist+jwt", key=key, op_key=op_key)
    status_list_built.send(sender=None, number=number)
    with _signed_lock:
        _signed[number] = (version, token, now)
    return token


def jwt_signing_algorithm() -> str:
    """The algorithm of every JWT this server signs for resource servers: the access tokens
    (signing.jwtokens) and the status lists that revoke them, under one key (the verifier
    checks both with the same JWKS key)."""
    return settings.OAUTH_JWT_ACCESS_TOKEN_ALGORITHM


# The signature schemes, built once (cryptography's objects are immutable), and each key's
# protected header, encoded once per (algorithm, kid, typ): per token only the claims are encoded.
_ES256 = ec.ECDSA(hashes.SHA256())
_RS256 = (padding.PKCS1v15(), hashes.SHA256())
_headers: dict[tuple[str, str, str], str] = {}


def _header(key, typ: str) -> str:
    found = _headers.get((key.algorithm, key.kid, typ))
    if found is None:
        header = {"alg": key.algorithm, "kid": key.kid, "typ": typ}
        found = _headers[(key.algorithm, key.kid, typ)] = _b64(json.dumps(header, separators=(",", ":")).encode())
    return found


def jws_sign(claims: dict, *, typ: str, key, op_key) -> str:
    """A compact JWS of `claims` with this key (header alg, kid, typ), for a JWT access token
    (`at+jwt`, signing.jwtokens) or a status list (`statuslist+jwt`): RFC 7515 signed by
    `cryptography` directly with the key signing.keys.signer_current holds (a third of
    jwcrypto's JWS time per token, measured; tests verify the result with jwcrypto and with
    oauth4webapi)."""
    signing_input = (_header(key, typ) + "." + _b64(json.dumps(claims, separators=(",", ":")).encode())).encode("ascii")
    if key.algorithm == "ES256":
        r, s = decode_dss_signature(op_key.sign(signing_input, _ES256))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    elif key.algorithm == "RS256":
        signature = op_key.sign(signing_input, *_RS256)
    else:
        raise ValueError(f"no signing with {key.algorithm}")
    return signing_input.decode("ascii") + "." + _b64(signature)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


# --- sweeping ------------------------------------------------------------------------------------


def status_lists_sweep() -> int:
    """Delete the lists whose every token has expired, with their revocations: none issued into
    them for longer than an access token lives, none of their tokens still alive, and not the
    newest, which blocks may still reach."""
    newest = StatusList.objects.order_by("-number").values_list("number", flat=True).first()
    if newest is None:
        return 0
    now = timezone.now()
    cutoff = now - timedelta(seconds=oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS + 60)
    candidates = list(
        StatusList.objects.filter(last_issued__lt=cutoff).exclude(number=newest).values_list("number", flat=True)
    )
    if not candidates:
        return 0
    # A process may still hand out indices of a block it reserved long ago: a live token keeps its list.
    alive = set(
        AccessToken.objects.filter(status_list__in=candidates, expires__gt=now)
        .values_list("status_list", flat=True)
        .distinct()
    )
    gone = [number for number in candidates if number not in alive]
    with transaction.atomic():
        StatusRevocation.objects.filter(status_list__in=gone).delete()
        deleted, _ = StatusList.objects.filter(number__in=gone).delete()
    return deleted
