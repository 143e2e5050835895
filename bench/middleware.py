"""Report how many SQL statements each request ran, in the X-DB-Queries response header.

Every statement that goes through Django's cursor on any connection is counted (SELECT, INSERT,
UPDATE, DELETE, SAVEPOINT...). Not counted, because Django does not send them through a cursor:
the implicit BEGIN that psycopg issues and the COMMIT of an atomic block, and the connection
health check. The bench reads the header for its "queries per request" column.
"""

from contextlib import ExitStack

from django.db import connections

HEADER = "X-DB-Queries"


class QueryCountMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        count = 0

        def counting(execute, sql, params, many, context):
            nonlocal count
            count += 1
            return execute(sql, params, many, context)

        with ExitStack() as stack:
            for connection in connections.all(initialized_only=False):
                stack.enter_context(connection.execute_wrapper(counting))
            response = self.get_response(request)
        response[HEADER] = str(count)
        return response
