"""Hourly counts for the admin's morning view (operations.models.HourlyCount).

The request path only adds to a dictionary in memory (under a lock: gthread workers); every
OPERATIONS_HOURLY_FLUSH_SECONDS a process writes what it has in one statement that adds to the shared rows
(INSERT ... ON CONFLICT DO UPDATE SET count = count + excluded.count, on SQLite and PostgreSQL).
A process killed outright loses at most its last few seconds of counts: the view is an overview,
the exact figures are Prometheus's.
"""

import logging
import random
import threading
import time
from collections import defaultdict

from django.conf import settings
from django.db import DatabaseError, connection

from operations.models import HourlyCount

logger = logging.getLogger(__name__)

TOKENS_ISSUED = "tokens_issued"
TOKENS_REFUSED = "tokens_refused"
REFUSALS_BY_CLIENT = "token_refusals_by_client"
RATELIMIT_REFUSED = "ratelimit_refused"
KEPT_HOURS = 48
SWEEP_ONE_IN = 100
MAX_LABEL = 255
# Distinct labels (client_ids, which a stranger chooses) one process keeps per flush; the rest are
# counted under OTHERS, so that guessing with made-up client_ids cannot grow the table without bound.
MAX_LABELS_PER_FLUSH = 200
OTHERS = "(others)"

_lock = threading.Lock()
_pending: dict[tuple[int, str, str], int] = defaultdict(int)
_flushed_at = time.monotonic()


def current_hour() -> int:
    return int(time.time() // 3600)


def count(name: str, label: str = "") -> None:
    key = (current_hour(), name, label[:MAX_LABEL])
    with _lock:
        if key not in _pending and label and len(_pending) >= MAX_LABELS_PER_FLUSH:
            key = (key[0], name, OTHERS)
        _pending[key] += 1


def flush_if_due() -> None:
    every = settings.OPERATIONS_HOURLY_FLUSH_SECONDS
    if every is not None and time.monotonic() - _flushed_at >= every:
        flush()


def flush() -> None:
    global _flushed_at
    with _lock:
        pending = dict(_pending)
        _pending.clear()
        _flushed_at = time.monotonic()
    if not pending:
        return
    table = connection.ops.quote_name(HourlyCount._meta.db_table)
    values = ", ".join(["(%s, %s, %s, %s)"] * len(pending))
    flat = [value for (hour, name, label), n in pending.items() for value in (hour, name, label, n)]
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (hour, name, label, count) VALUES {values} "
                f"ON CONFLICT (hour, name, label) DO UPDATE SET count = {table}.count + excluded.count",
                flat,
            )
            if random.randrange(SWEEP_ONE_IN) == 0:
                HourlyCount.objects.filter(hour__lt=current_hour() - KEPT_HOURS).delete()
    except DatabaseError as exc:
        # Counted again later: the database is down, and the 503s say so already.
        with _lock:
            for key, n in pending.items():
                _pending[key] += n
        logger.warning("Hourly counts not written (%s); kept for the next try", type(exc).__name__)


def forget() -> None:
    """Tests: nothing pending."""
    with _lock:
        _pending.clear()
