"""Report how many SQL statements and database round trips each request made, in two headers.

X-DB-Queries: every statement that goes through Django's cursor on any connection (SELECT,
INSERT, UPDATE, DELETE, SAVEPOINT...), plus every `SELECT 1` the connection health check sent
(CONN_HEALTH_CHECKS; plumbing.postgresql counts them, since Django sends them past its cursor).

X-DB-Round-Trips: the same plus the BEGIN that psycopg sends before a transaction's first
statement and the COMMIT or ROLLBACK that ends it (plumbing.postgresql counts those too). On a
backend without these counters (SQLite, stock Django's) only the cursor's statements are seen.
The bench reads both headers for its "queries" and "round trips" columns.
"""

from contextlib import ExitStack

from django.db import connections

HEADER = "X-DB-Queries"
ROUND_TRIPS_HEADER = "X-DB-Round-Trips"


def _uncounted(connection) -> tuple[int, int]:
    return getattr(connection, "health_check_pings", 0), getattr(connection, "transaction_round_trips", 0)


class QueryCountMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        count = 0

        def counting(execute, sql, params, many, context):
            nonlocal count
            count += 1
            return execute(sql, params, many, context)

        every = connections.all(initialized_only=False)
        before = [_uncounted(connection) for connection in every]
        with ExitStack() as stack:
            for connection in every:
                stack.enter_context(connection.execute_wrapper(counting))
            response = self.get_response(request)
        pings = transactions = 0
        for connection, (pings_before, transactions_before) in zip(every, before, strict=True):
            pings_after, transactions_after = _uncounted(connection)
            pings += pings_after - pings_before
            transactions += transactions_after - transactions_before
        response[HEADER] = str(count + pings)
        response[ROUND_TRIPS_HEADER] = str(count + pings + transactions)
        return response
