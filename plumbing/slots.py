"""At most N of something at once across the whole server (every process), e.g. outbound fetches.

A per-process semaphore bounds nothing under gunicorn's sync workers (one request per process at a
time), so the slots live where the rate limits keep their counts (settings.RATELIMIT_CACHE: Redis,
or PostgreSQL's counter table, plumbing/countercache.py). On SQLite that cache is per process
(locmem), and so are the slots: docs/configuration.md, "Rate limits".

Slot i of a pool is one cache key, taken with `cache.add` (atomic on every backend we use: Redis
SET NX, one INSERT … ON CONFLICT statement in PostgreSQL, a lock in locmem) with a lifetime of its
own, so that a slot whose holder was killed (gunicorn's WORKER TIMEOUT, SIGKILL) frees itself when
that lifetime ends; the holder gives it back sooner when it is done, if it is still its own.

If the cache cannot be reached the slot is granted and the failure logged, as the rate limiter
does (plumbing.ratelimit): what a slot guards must have a bound of its own (a deadline).
"""

import contextlib
import logging
import random
import secrets
import time
from collections.abc import Iterator

from django.conf import settings
from django.core.cache import caches

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def slot_taken(*, pool: str, size: int, lifetime: float) -> Iterator[bool]:
    """Take one of `size` server-wide slots named `pool` for at most `lifetime` seconds, without
    waiting; yields whether one was taken (False: all are in use), and gives it back on exit."""
    for attempt in (1, 2):
        try:
            cache = caches[settings.RATELIMIT_CACHE]
            held = _take(cache, pool, size, lifetime)
            break
        except Exception as exc:  # any cache backend's error: see the module docstring
            # Once more first: processes using PostgreSQL's counter table for the first time at the
            # same moment race to create it (IntegrityError), and the second try finds it made.
            if attempt == 2:
                logger.error(
                    "Slot %s granted without counting: the cache is unavailable (%s)", pool, type(exc).__name__
                )
                yield True
                return
    try:
        yield held is not None
    finally:
        if held is not None:
            _give_back(cache, *held, lifetime)


def slots_in_use(*, pool: str, size: int) -> int:
    """How many slots of `pool` are taken right now (for tests and diagnostics)."""
    cache = caches[settings.RATELIMIT_CACHE]
    return sum(cache.get(_key(pool, index)) is not None for index in range(size))


def _key(pool: str, index: int) -> str:
    return f"slots:{pool}:{index}"


def _take(cache, pool: str, size: int, lifetime: float) -> tuple[str, int, float] | None:
    # A number, not a string: plumbing.countercache stores numbers only (exact below 2**53).
    token = secrets.randbits(52) + 1
    # Start anywhere, so that holders spread over the keys and a full pool costs `size` tries.
    start = random.randrange(size)  # noqa: S311 - not a secret
    for step in range(size):
        key = _key(pool, (start + step) % size)
        # Whole seconds: Redis and locmem round a fractional timeout down (to 0: no expiry in Redis).
        if cache.add(key, token, timeout=max(1, int(lifetime + 0.999))):
            return key, token, time.monotonic()
    return None


def _give_back(cache, key: str, token: int, taken_at: float, lifetime: float) -> None:
    # Past its lifetime the key may already be someone else's slot: leave it alone (it expires).
    # Within it, only our own token is deleted (get and delete are two steps, but nobody else can
    # `add` a key that has not expired).
    try:
        if time.monotonic() - taken_at < lifetime - 0.5 and cache.get(key) == token:
            cache.delete(key)
    except Exception as exc:  # the slot will expire by itself
        logger.error("Slot %s not given back: the cache is unavailable (%s)", key, type(exc).__name__)
