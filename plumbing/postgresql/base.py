"""Django's PostgreSQL backend with a health check that costs no round trip when none is needed.

ENGINE "plumbing.postgresql" (config.settings picks it for a postgres:// DATABASE_URL). Everything
is Django's `django.db.backends.postgresql` except two things:

- The per-request health check (CONN_HEALTH_CHECKS): Django sends `SELECT 1` on a persistent
  connection at the first query of every request, a full round trip that doubled the database
  round trips of `GET /v2/me`. Here the connection's socket is polled first, without waiting: a
  connection that PostgreSQL has closed or is closing (a restart, `pg_terminate_backend`, an
  idle timeout, a crash: the server's goodbye message or the socket's end) is readable, and only
  then is `SELECT 1` sent, which fails and makes Django reconnect exactly as before. A quiet
  socket of an idle, healthy connection has nothing to read. A peer that vanished without a word
  (a cut network) is not seen by either check in advance; the request's query fails, the client
  gets the 503 of plumbing.dbfailure, and Django's end-of-request check (after an error it always
  sends `SELECT 1`, unchanged here) replaces the connection.
  With the setting HEALTH_CHECK "ping" (DATABASE_HEALTH_CHECK=ping) every check is Django's
  SELECT 1, for comparison.
- Counters of the round trips that do not go through Django's cursor, for the query counter of
  `make bench` (bench/middleware.py): `health_check_pings` (each `SELECT 1` sent by the health
  check) and `transaction_round_trips` (the BEGIN that psycopg sends before a transaction's
  first statement and the COMMIT or ROLLBACK that ends it).

Replaces: Django's `DatabaseWrapper.is_usable()` health check (`SELECT 1` before the first query of
every request on a persistent connection). Justified by (docs/performance.md, "The hot paths", 2): one database
round trip fewer per request; on loopback the trial measured 1.01 × and 0.97 × (`/v2/me`), inside
the noise, so it is kept for the round trip it saves on a real network and for the countable
pings. Kept honest by tests/plumbing/test_postgresql_backend.py and tests/integration/test_database_outage.py.
"""

import select

from django.db.backends.postgresql import base
from psycopg import pq

_QUIET = (pq.ConnStatus.OK, pq.TransactionStatus.IDLE)


class DatabaseWrapper(base.DatabaseWrapper):
    health_check_pings = 0
    transaction_round_trips = 0

    def _socket_is_quiet(self) -> bool:
        """True when the idle connection's socket has nothing to read: nothing has come from the server."""
        pgconn = self.connection.pgconn
        if (pgconn.status, pgconn.transaction_status) != _QUIET:
            return False
        try:
            poller = select.poll()
            poller.register(pgconn.socket, select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP)
            return not poller.poll(0)
        except (OSError, ValueError, base.Database.Error):
            return False

    def close_if_health_check_failed(self):
        if self.pool or self.connection is None or not self.health_check_enabled or self.health_check_done:
            return super().close_if_health_check_failed()
        if self.settings_dict.get("HEALTH_CHECK", "poll") == "poll" and self._socket_is_quiet():
            self.health_check_done = True
            return None
        self.health_check_pings += 1
        return super().close_if_health_check_failed()

    def _in_transaction_on_server(self) -> bool:
        return self.connection is not None and self.connection.pgconn.transaction_status != pq.TransactionStatus.IDLE

    def _commit(self):
        if self._in_transaction_on_server():
            self.transaction_round_trips += 2  # BEGIN and COMMIT
        return super()._commit()

    def _rollback(self):
        if self._in_transaction_on_server():
            self.transaction_round_trips += 2  # BEGIN and ROLLBACK
        return super()._rollback()
