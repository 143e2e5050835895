"""Token status lists (draft-ietf-oauth-status-list): how a revocation reaches every resource
server that verifies JWT access tokens itself (scopes.jwt), within the list's `ttl`.

Each JWT access token holds one global index g, handed out in blocks (BLOCK indices per process,
one statement per block: a PostgreSQL sequence, elsewhere a counter row): its bit is bit g % size of
list g // size. A list is a row (`StatusList`) of size / 8 bytes, made when the first block reaches
it, served signed at `GET /v2/auth/oauth2/status-lists/<number>` as a `statuslist+jwt`, and deleted
once every token it holds has expired (`status_lists_sweep`, run by `cleartokens_expired`): what is
kept and served stays bounded by the tokens alive, never by the tokens ever issued. Indices are
not reused, so a revoked bit is never cleared for another token.

A bit is set (1 = INVALID) in the transaction that ends the token: AccessToken's queryset and
instance `delete` (revocation, connected apps, family revocation on replay, client rejection and
deletion, user deactivation), the rotation of a refresh token (the old access token) on both
redemption paths, and a user's deletion. One UPDATE per list touched: `set_bit` on PostgreSQL,
read-modify-write under the row's lock elsewhere.

Settings: OAUTH_STATUS_LIST_SIZE (131,072 bits, 16 KB raw), OAUTH_STATUS_LIST_TTL (10 seconds: how
long a resource server may keep a list, hence how long a revoked token may still pass there).
"""

import base64
import json
import threading
import time
import zlib
from collections import defaultdict

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import F
from django.utils import timezone
from jwcrypto import jws

from oauthclients.keys import signer_current
from oauthclients.models import StatusCounter, StatusList

BLOCK = 256
SEQUENCE = "oauthclients_status_index_seq"
STATUS_LIST_PATH = "/v2/auth/oauth2/status-lists/"
# A signed list is valid this long (its `exp`): well beyond its ttl, so that a resource server
# whose authorization server is briefly unreachable can keep the last one for its staleness bound.
LIST_LIFETIME_SECONDS = 24 * 3600


def list_size() -> int:
    return int(getattr(settings, "OAUTH_STATUS_LIST_SIZE", 131072))


def list_ttl() -> int:
    return int(getattr(settings, "OAUTH_STATUS_LIST_TTL", 10))


def list_uri(number: int) -> str:
    return f"{settings.OAUTH_ISSUER}{STATUS_LIST_PATH}{number}"


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
        StatusList.objects.get_or_create(number=number, defaults={"size": size, "bits": bytes(size // 8)})
    StatusList.objects.filter(number__in=list(numbers)).update(last_issued=now)


# --- setting bits --------------------------------------------------------------------------------


def status_bits_set(pairs) -> int:
    """Set the bits of these (list number, bit index) pairs (revoked); one UPDATE per list."""
    by_list = defaultdict(set)
    for number, index in pairs:
        if number is not None and index is not None:
            by_list[number].add(index)
    if not by_list:
        return 0
    alias = router.db_for_write(StatusList)
    connection = connections[alias]
    now = timezone.now()
    table = connection.ops.quote_name(StatusList._meta.db_table)
    for number, indices in by_list.items():
        if connection.vendor == "postgresql":
            expression = "bits"
            params = []
            for index in sorted(indices):
                expression = f"set_bit({expression}, %s, 1)"
                params.append(index)
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET bits = {expression}, updated = %s WHERE number = %s", [*params, now, number]
                )
        else:
            with transaction.atomic(using=alias):
                row = StatusList.objects.using(alias).select_for_update().filter(number=number).first()
                if row is None:
                    continue
                bits = bytearray(row.bits)
                for index in indices:
                    bits[index // 8] |= 1 << (index % 8)
                StatusList.objects.using(alias).filter(number=number).update(bits=bytes(bits), updated=now)
    return sum(len(indices) for indices in by_list.values())


def status_bit(number: int, index: int) -> int | None:
    """The bit of one token (None: no such list)."""
    bits = StatusList.objects.filter(number=number).values_list("bits", flat=True).first()
    if bits is None:
        return None
    return bytes(bits)[index // 8] >> (index % 8) & 1


# --- serving -------------------------------------------------------------------------------------

# (number, updated, kid) -> (signed list, made at): re-signed only when the list changed or its
# signature would be older than the ttl.
_signed: dict[int, tuple[tuple, str, float]] = {}
_signed_lock = threading.Lock()


def status_list_token(number: int) -> str | None:
    """The signed `statuslist+jwt` of list `number`, or None when there is no such list."""
    row = StatusList.objects.filter(number=number).values_list("updated", "bits").first()
    if row is None:
        return None
    updated, bits = row
    signer = signer_current(access_token_algorithm())
    if signer is None:
        raise LookupError("no signing key")
    key, private = signer
    version = (updated, key.kid)
    now = time.time()
    held = _signed.get(number)
    if held is not None and held[0] == version and now - held[2] < max(1, list_ttl()):
        return held[1]
    issued = int(now)
    claims = {
        "sub": list_uri(number),
        "iat": issued,
        "exp": issued + LIST_LIFETIME_SECONDS,
        "ttl": list_ttl(),
        "status_list": {"bits": 1, "lst": _b64(zlib.compress(bytes(bits), 9))},
    }
    token = sign(claims, typ="statuslist+jwt", key=key, private=private)
    with _signed_lock:
        _signed[number] = (version, token, now)
    return token


def access_token_algorithm() -> str:
    return getattr(settings, "OAUTH_JWT_ACCESS_TOKEN_ALGORITHM", "ES256")


def sign(claims: dict, *, typ: str, key, private) -> str:
    """A compact JWS of `claims` with this key (header alg, kid, typ)."""
    token = jws.JWS(json.dumps(claims, separators=(",", ":")).encode())
    header = {"alg": key.algorithm, "kid": key.kid, "typ": typ}
    token.add_signature(private, alg=key.algorithm, protected=json.dumps(header))
    return token.serialize(compact=True)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


# --- sweeping ------------------------------------------------------------------------------------


def status_lists_sweep() -> int:
    """Delete the lists whose every token has expired (none issued into them for longer than an
    access token lives), except the newest, which blocks may still reach."""
    from datetime import timedelta

    from oauth2_provider.settings import oauth2_settings

    newest = StatusList.objects.order_by("-number").values_list("number", flat=True).first()
    if newest is None:
        return 0
    cutoff = timezone.now() - timedelta(seconds=oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS + 60)
    deleted, _ = StatusList.objects.filter(last_issued__lt=cutoff).exclude(number=newest).delete()
    return deleted
