"""A request id for every request: taken from `X-Request-ID` when a proxy (or the client) sent a
sane one, made otherwise; returned in the response's `X-Request-ID` and put on every log record
written while the request runs (RequestIdFilter, on the console handler), so that one
authorization can be followed through the authorize, consent, token and introspection logs.

A sent id is only a label: at most 128 characters of [A-Za-z0-9._:-] (no spaces or line breaks
to forge log lines with); anything else is replaced by a new one.
"""

import contextvars
import logging
import re
import uuid

from django.core.signals import request_finished
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


def request_id() -> str | None:
    """The id of the request this thread is serving, or None outside a request."""
    return _current.get()


def _chosen(sent: str) -> str:
    return sent if _SANE.fullmatch(sent) else uuid.uuid4().hex


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chosen = _chosen(request.META.get("HTTP_X_REQUEST_ID", ""))
        request.request_id = chosen
        # Kept until the response is closed (request_finished below), not reset on the way out:
        # Django logs a 4xx or 5xx ("Bad Request: ...") after the last middleware has returned.
        _current.set(chosen)
        response = self.get_response(request)
        response[HEADER] = chosen
        return response


@receiver(request_finished)
def _forget(**kwargs) -> None:
    _current.set(None)


class RequestIdFilter(logging.Filter):
    """Puts `request_id` on every record ("-" outside a request), for the formatters to show."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _current.get() or "-"
        return True
