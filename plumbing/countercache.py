"""The rate limiter's counters in PostgreSQL, for deployments without Redis (settings, docs/configuration.md).

Without a shared cache each server process counts on its own, so with four workers a client over
its limit on one worker is served by the next. Django's DatabaseCache would share the counts but
increments by read-then-write (two concurrent hits can count as one); this backend keeps only
what plumbing.ratelimit.Window needs — add, incr, get, set, delete — each one atomic statement on
an UNLOGGED table (counters need no crash safety: a lost window merely starts again):

    add:  INSERT … ON CONFLICT DO UPDATE … WHERE the row has expired  (opens a window once)
    incr: UPDATE … SET value = value + n … RETURNING value             (no lost update)

Values are numbers (counts, and the window's closing time). The limiter writes through
`check_windows` (every limit of a route that must be written, counted or read, in one round trip;
the first `make bench` with four statements per token request measured refresh at 0.90 × and
exchange at 0.86 × their floors) and keeps what it learns in a ledger of its own process
(plumbing.ratelimit.Ledger), so that most successful requests cost no statement at all: request
limits are added in small batches, failure limits are written once per failure.
`count_in_window` and `window_closes` are the same statement for one key, and the rest of the cache
API is there for everything else. The table is made on first use, and expired rows are swept now
and then by the statement that opens a window. Measured by `make bench`
(docs/performance.md: the token scenarios against their floors).
"""

import random
import time

from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache
from django.db import connections

SWEEP_ONE_IN = 1000


class PostgresCounterCache(BaseCache):
    def __init__(self, table: str, params: dict):
        super().__init__(params)
        self._table = table
        self._alias = params.get("OPTIONS", {}).get("DATABASE", "default")
        self._ready = False

    # --- plumbing --------------------------------------------------------------------------------

    def _cursor(self):
        cursor = connections[self._alias].cursor()
        if not self._ready:  # once per cache instance (Django makes one per thread)
            cursor.execute(
                f"CREATE UNLOGGED TABLE IF NOT EXISTS {self._quoted} "
                "(key text PRIMARY KEY, value double precision NOT NULL, expires double precision NOT NULL)"
            )
            self._ready = True
        return cursor

    @property
    def _quoted(self) -> str:
        return connections[self._alias].ops.quote_name(self._table)

    def _expires(self, timeout) -> float:
        expires = self.get_backend_timeout(timeout)  # BaseCache: the moment, as time.time() counts
        return float("inf") if expires is None else expires

    @staticmethod
    def _number(value):
        return int(value) if float(value).is_integer() else value

    # --- what the limiter asks for, in one statement each --------------------------------------

    def count_in_window(self, key, period: int, version=None) -> tuple[int, float]:
        """plumbing.ratelimit.Window.count in one statement: add one to the window's count, opening
        a new window of `period` seconds if there is none or it has closed; (count, closes at)."""
        return self.check_windows(read=[], count=[(key, period)], version=version)[key]

    def check_windows(self, *, read: list[str], count: list[tuple], version=None) -> dict:
        """A route's limits in one statement: each `count` key counted (count_in_window) — by one,
        or by n for a (key, period, n) entry — each `read` key read; {key: (value, closes at)} for
        the open windows."""
        now = time.time()
        made = {key: self.make_and_validate_key(key, version=version) for key in [*read, *(c[0] for c in count)]}
        original = {stored: key for key, stored in made.items()}
        read_keys = [made[key] for key in read]
        counted = [(made[key], period, float(by[0] if by else 1)) for key, period, *by in count]
        parts, params = [], []
        for index, (key, period, by) in enumerate(counted):
            parts.append(
                f"c{index} AS (INSERT INTO {self._quoted} AS t (key, value, expires) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET "
                "value = CASE WHEN t.expires <= %s THEN EXCLUDED.value ELSE t.value + EXCLUDED.value END, "
                "expires = CASE WHEN t.expires <= %s THEN EXCLUDED.expires ELSE t.expires END "
                "RETURNING key, value, expires)"
            )
            params += [key, by, now + period, now, now]
        selects = [f"SELECT key, value, expires FROM c{index}" for index in range(len(counted))]
        if read_keys:
            selects.append(f"SELECT key, value, expires FROM {self._quoted} WHERE key = ANY(%s) AND expires > %s")
            params += [read_keys, now]
        if not selects:
            return {}
        sql = ("WITH " + ", ".join(parts) + " " if parts else "") + " UNION ALL ".join(selects)
        with self._cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
            if counted and random.randrange(SWEEP_ONE_IN) == 0:  # noqa: S311 - not a secret
                cursor.execute(f"DELETE FROM {self._quoted} WHERE expires <= %s", [now])
        return {original[key]: (self._number(value), closes) for key, value, closes in rows}

    def give_back(self, keys: list, version=None) -> None:
        """One count taken back from the open window of each key (attempts that succeeded,
        plumbing.ratelimit.Window.give_back), in one statement: never below zero, nor from a closed window."""
        made = [self.make_and_validate_key(key, version=version) for key in keys]
        with self._cursor() as cursor:
            cursor.execute(
                f"UPDATE {self._quoted} SET value = value - 1 WHERE key = ANY(%s) AND expires > %s AND value >= 1",
                [made, time.time()],
            )

    def window_closes(self, key, version=None) -> float | None:
        """When the open window of `key` closes (None: no open window)."""
        return self.check_windows(read=[key], count=[], version=version).get(key, (None, None))[1]

    # --- the cache API -----------------------------------------------------------------------------

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._quoted} AS t (key, value, expires) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires "
                "WHERE t.expires <= %s RETURNING 1",
                [key, float(value), self._expires(timeout), time.time()],
            )
            opened = cursor.fetchone() is not None
            if opened and random.randrange(SWEEP_ONE_IN) == 0:  # noqa: S311 - not a secret
                cursor.execute(f"DELETE FROM {self._quoted} WHERE expires <= %s", [time.time()])
        return opened

    def incr(self, key, delta=1, version=None):
        key = self.make_and_validate_key(key, version=version)
        with self._cursor() as cursor:
            cursor.execute(
                f"UPDATE {self._quoted} SET value = value + %s WHERE key = %s AND expires > %s RETURNING value",
                [float(delta), key, time.time()],
            )
            row = cursor.fetchone()
        if row is None:
            raise ValueError(f"Key '{key}' not found")
        return self._number(row[0])

    def get(self, key, default=None, version=None):
        key = self.make_and_validate_key(key, version=version)
        with self._cursor() as cursor:
            cursor.execute(f"SELECT value FROM {self._quoted} WHERE key = %s AND expires > %s", [key, time.time()])
            row = cursor.fetchone()
        return default if row is None else self._number(row[0])

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> None:
        key = self.make_and_validate_key(key, version=version)
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._quoted} (key, value, expires) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires",
                [key, float(value), self._expires(timeout)],
            )

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        with self._cursor() as cursor:
            cursor.execute(
                f"UPDATE {self._quoted} SET expires = %s WHERE key = %s AND expires > %s",
                [self._expires(timeout), key, time.time()],
            )
            return cursor.rowcount > 0

    def delete(self, key, version=None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        with self._cursor() as cursor:
            cursor.execute(f"DELETE FROM {self._quoted} WHERE key = %s", [key])
            return cursor.rowcount > 0

    def clear(self) -> None:
        with self._cursor() as cursor:
            cursor.execute(f"DELETE FROM {self._quoted}")
