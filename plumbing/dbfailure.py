"""Database unreachable: a clean 503 with Retry-After instead of a 500 (plumbing.errors.service_unavailable).

Django reconnects by itself once the database is back: with CONN_HEALTH_CHECKS on, a persistent
connection (CONN_MAX_AGE) that died during the outage is checked and replaced at the start of the
next request that uses it, so no worker needs a restart.
"""

import logging

from plumbing.errors import DATABASE_UNAVAILABLE, service_unavailable
from plumbing.observe import database_unavailable

logger = logging.getLogger(__name__)

MAX_LOGGED_MESSAGE = 200


def _printable(text: str) -> str:
    # A path or message with CR/LF must not forge log lines.
    return text.encode("unicode_escape").decode("ascii")[:MAX_LOGGED_MESSAGE]


class DatabaseUnavailableMiddleware:
    """Catches OperationalError / InterfaceError from views (DRF views re-raise them)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, DATABASE_UNAVAILABLE):
            return None
        # One line, no traceback, and of the request only its method and path: a body or a
        # header may carry a secret, code or token (SECURITY.md).
        message = str(exception).splitlines()[0] if str(exception) else ""
        logger.warning(
            "Database unavailable, answered 503: %s %s (%s: %s)",
            request.method,
            _printable(request.path),
            type(exception).__name__,
            _printable(message),
        )
        database_unavailable.send(sender=DatabaseUnavailableMiddleware, error=type(exception).__name__)
        return service_unavailable(request)
