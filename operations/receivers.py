"""Signal receivers of the operations app (connected in OperationsConfig.ready): each one a memory write."""

import time

from django.core.signals import request_finished
from oauth2_provider.signals import app_authorized

from operations import hourly, metrics
from plumbing.observe import database_unavailable, metadata_document_fetch, ratelimit_refused, status_list_built


def _token_issued(sender, request, token, **kwargs):
    # The access line's user id: the token's user, known here without a query.
    request.operations_user_id = token.user_id


def _ratelimit_refused(sender, limit, **kwargs):
    metrics.RATELIMIT_REFUSALS.labels(limit).inc()
    hourly.count(hourly.RATELIMIT_REFUSED, limit)


def _database_unavailable(sender, error, **kwargs):
    metrics.DATABASE_UNAVAILABLE.labels(error).inc()


def _metadata_document_fetch(sender, phase, outcome=None, **kwargs):
    if phase == "started":
        metrics.METADATA_IN_FLIGHT.inc()
        return
    if phase == "finished":
        metrics.METADATA_IN_FLIGHT.dec()
    metrics.METADATA_FETCHES.labels(outcome or "error").inc()


def _status_list_built(sender, **kwargs):
    metrics.STATUS_LIST_BUILDS.inc()
    metrics.STATUS_LIST_LAST_BUILD.set(time.time())


def _request_finished(sender, **kwargs):
    # After the response has gone (gunicorn closes it once written): the hourly counts' write, at
    # most every OPERATIONS_HOURLY_FLUSH_SECONDS, never inside a request's time or query count.
    hourly.flush_if_due()


def connect() -> None:
    request_finished.connect(_request_finished, dispatch_uid="operations.request_finished")
    app_authorized.connect(_token_issued, dispatch_uid="operations.token_issued")
    ratelimit_refused.connect(_ratelimit_refused, dispatch_uid="operations.ratelimit_refused")
    database_unavailable.connect(_database_unavailable, dispatch_uid="operations.database_unavailable")
    metadata_document_fetch.connect(_metadata_document_fetch, dispatch_uid="operations.metadata_document_fetch")
    status_list_built.connect(_status_list_built, dispatch_uid="operations.status_list_built")
