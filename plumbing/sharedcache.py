"""Django's default cache in the database, for PostgreSQL without Redis (settings, docs/accounts.md,
"Where security state is kept").

django-allauth keeps security state in Django's default cache, and can use no other: the
authenticator-app codes already used (each refused again for its period, RFC 6238 §5.2), the `jti`
of an upstream provider's ID tokens (replays), and its own limits (password reset requests and
links, sign-up, email verification, passkey sign-in). In a per-process cache every server process
keeps its own, so a code used once was accepted again by the other workers. This backend is
Django's DatabaseCache with three changes:

- `add` is exact. Django's reads the row, then inserts a new one or overwrites one that has
  expired, so two processes adding one key over an expired row both succeed. Here the expired row
  is deleted first and the primary key decides: exactly one INSERT wins, whatever the timing.
- Culling deletes expired rows only. Django's also deletes live rows past MAX_ENTRIES, so a flood
  of keys (reset requests for many addresses) could evict a used code's mark.
- A missing table is no 500. Each process looks for the table once (one query); while it is
  missing, the process keeps the state in a cache of its own (as it did before this table), logs
  an error, and looks again every RECHECK_SECONDS. /readyz and `check --deploy --database default`
  name the problem (`table_problem`).

The table, TABLE, is made by `migrate` (accounts/migrations/0006_shared_cache_table.py) with Django's
`createcachetable` layout. Nothing on the token, introspection, userinfo or authorization hot
paths reads or writes the default cache (tests/accounts/test_security_state_cache.py).
"""

import base64
import logging
import pickle
import random
import threading
import time
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache
from django.core.cache.backends.db import DatabaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.db import IntegrityError, connections, router, transaction
from django.utils.timezone import now as tz_now

logger = logging.getLogger(__name__)

TABLE = "shared_cache"
RECHECK_SECONDS = 60
SWEEP_ONE_IN = 200

# Per (database alias, table), for the whole process (Django makes a cache object per thread):
# True once the table was seen, else when it was last found missing (time.monotonic()).
_tables: dict[tuple[str, str], bool | float] = {}
# Cache backends whose contents live inside one server process (what this table is for): the
# deploy checks warn of them (config.checks), and /readyz has nothing to reach there
# (operations.readiness).
PER_PROCESS_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)

_fallbacks: dict[tuple[str, str], LocMemCache] = {}
_lock = threading.Lock()


def shared_cache_forget() -> None:
    """Tests: look for the tables again, and drop what the per-process stand-ins held."""
    with _lock:
        _tables.clear()
        for stand_in in _fallbacks.values():
            stand_in.clear()
        _fallbacks.clear()


class SharedStateCache(DatabaseCache):
    def __init__(self, table: str, params: dict):
        super().__init__(table or TABLE, params)

    # --- the table, or this process's stand-in while it is missing -------------------------------

    def _place(self) -> tuple[str, str]:
        return router.db_for_write(self.cache_model_class), self._table

    def _table_present(self, db: str) -> bool:
        return self._table in connections[db].introspection.table_names()

    def _stand_in(self) -> BaseCache | None:
        """None when the table is there (the common case: no query), else the per-process cache."""
        place = self._place()
        seen = _tables.get(place)
        if seen is True:
            return None
        if seen is None or time.monotonic() - seen >= RECHECK_SECONDS:
            if self._table_present(place[0]):
                _tables[place] = True
                return None
            _tables[place] = time.monotonic()
            logger.error(
                "Cache table %s is missing: security state (used authenticator-app codes, allauth's "
                "limits) is kept per process until it exists. Run `manage.py migrate`.",
                self._table,
            )
        with _lock:
            stand_in = _fallbacks.get(place)
            if stand_in is None:
                # As many entries as the per-process default cache keeps (settings).
                stand_in = LocMemCache(f"shared-cache-stand-in:{place}", {"OPTIONS": {"MAX_ENTRIES": 100_000}})
                _fallbacks[place] = stand_in
        return stand_in

    def table_problem(self) -> str | None:
        """None, or why this cache cannot share its state (/readyz, `check --deploy`)."""
        place = self._place()
        if _tables.get(place) is True:
            return None
        if self._table_present(place[0]):
            _tables[place] = True
            return None
        return f"table {self._table} is missing (manage.py migrate)"

    # --- the cache API: each operation in the table, or in the stand-in ----------------------------

    def get_many(self, keys, version=None):
        stand_in = self._stand_in()
        return stand_in.get_many(keys, version=version) if stand_in else super().get_many(keys, version=version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        stand_in = self._stand_in()
        if stand_in:
            return stand_in.set(key, value, timeout, version=version)
        return super().set(key, value, timeout, version=version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        stand_in = self._stand_in()
        if stand_in:
            return stand_in.touch(key, timeout, version=version)
        return super().touch(key, timeout, version=version)

    def delete(self, key, version=None):
        stand_in = self._stand_in()
        return stand_in.delete(key, version=version) if stand_in else super().delete(key, version=version)

    def delete_many(self, keys, version=None):
        stand_in = self._stand_in()
        return stand_in.delete_many(keys, version=version) if stand_in else super().delete_many(keys, version=version)

    def has_key(self, key, version=None):
        stand_in = self._stand_in()
        return stand_in.has_key(key, version=version) if stand_in else super().has_key(key, version=version)

    def clear(self):
        stand_in = self._stand_in()
        return stand_in.clear() if stand_in else super().clear()

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        """Store `value` under `key` unless a live entry holds it; True for exactly one caller."""
        stand_in = self._stand_in()
        if stand_in:
            return stand_in.add(key, value, timeout, version=version)
        key = self.make_and_validate_key(key, version=version)
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        quote, adapt = connection.ops.quote_name, connection.ops.adapt_datetimefield_value
        table = quote(self._table)
        # The expiry and the value as DatabaseCache._base_set writes them (whole seconds).
        now = tz_now().replace(microsecond=0)
        expires_at = self.get_backend_timeout(timeout)
        if expires_at is None:
            expires = datetime.max
        else:
            expires = datetime.fromtimestamp(expires_at, tz=UTC if settings.USE_TZ else None)
        expires = expires.replace(microsecond=0)
        stored = base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")
        try:
            with transaction.atomic(using=db), connection.cursor() as cursor:
                cursor.execute(
                    f"DELETE FROM {table} WHERE {quote('cache_key')} = %s AND {quote('expires')} < %s",
                    [key, adapt(now)],
                )
                cursor.execute(
                    f"INSERT INTO {table} ({quote('cache_key')}, {quote('value')}, {quote('expires')}) "
                    "VALUES (%s, %s, %s)",
                    [key, stored, adapt(expires)],
                )
        except IntegrityError:  # a live entry holds the key (or another process added it just now)
            return False
        if random.randrange(SWEEP_ONE_IN) == 0:  # noqa: S311 - not a secret
            with connection.cursor() as cursor:
                self._cull(db, cursor, now, 0)
        return True

    def _cull(self, db, cursor, now, num):
        # Expired rows only (Django's DatabaseCache._cull, pinned in tests/test_private_framework_apis.py,
        # also deletes live ones past MAX_ENTRIES): a used code's mark is never evicted.
        connection = connections[db]
        cursor.execute(
            f"DELETE FROM {connection.ops.quote_name(self._table)} WHERE {connection.ops.quote_name('expires')} < %s",
            [connection.ops.adapt_datetimefield_value(now)],
        )
