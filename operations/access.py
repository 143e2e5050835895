"""What one request was, in a few bounded words: which endpoint, which grant type, what outcome,
which client and user. Feeds the access line (operations.middleware) and the metrics' labels, so
every value here is from a fixed set except the ids, which go to the log line only.

Nothing here reads the database or loads a session: the user id comes from the token just issued
(DOT's app_authorized, operations.receivers) or from a user the request already loaded.
"""

import json

from django.http import HttpRequest, HttpResponse
from django.utils.functional import empty

from oauthflows.grants import GRANT_TYPES as DECLARED_GRANT_TYPES
from plumbing import paths
from plumbing.ratelimit import per_client
from plumbing.requestparams import request_json_pairs

# The metrics' grant_type labels: every grant the endpoint takes (oauthflows.grants), and two it
# refuses that clients commonly try, so that their attempts are counted by name.
GRANT_TYPES = frozenset({*DECLARED_GRANT_TYPES, "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"})
# RFC 6749 §5.2, RFC 8707 and RFC 8693's invalid_target, and what our middleware answers.
TOKEN_ERRORS = frozenset(
    {
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
        "invalid_target",
    }
)

# Every value grant_type_of and token_outcome return: the metrics' label values, each series declared
# at zero from start-up (operations.metrics.series_declare).
GRANT_TYPE_LABELS = (*sorted(GRANT_TYPES), "none", "other")
TOKEN_OUTCOMES = ("issued", *sorted(TOKEN_ERRORS), "rate_limited", "unavailable", "other")


def endpoint_names() -> tuple[str, ...]:
    """Every `endpoint` label of the metrics: each plumbing.paths.endpoint_name can return, and `other`."""
    return (*paths.endpoint_names(), "other")


def grant_type_of(request: HttpRequest) -> str:
    try:
        if request.content_type == "application/json":
            value = dict(request_json_pairs(request)).get("grant_type")
        else:
            value = request.POST.get("grant_type")
    except Exception:  # an unreadable body: the view has answered it already
        value = None
    if not value:
        return "none"
    return value if value in GRANT_TYPES else "other"


def token_outcome(response: HttpResponse) -> str:
    status = response.status_code
    if status == 200:
        return "issued"
    if status == 429:
        return "rate_limited"
    if status == 503:
        return "unavailable"
    if 400 <= status < 500 and response.get("Content-Type", "").startswith("application/json"):
        try:
            error = json.loads(response.content).get("error")
        except (ValueError, AttributeError):
            error = None
        if error in TOKEN_ERRORS:
            return error
    return "other"


def client_id_of(request: HttpRequest, endpoint: str | None) -> str | None:
    try:
        if endpoint in ("token", "introspect", "revoke"):
            return per_client(request)
        if endpoint == "authorize":
            return request.GET.get("client_id") or None
    except Exception:  # a query or body the view refused (too many fields, not UTF-8): no client_id
        return None
    return None


def user_id_of(request: HttpRequest) -> int | str | None:
    issued_for = getattr(request, "operations_user_id", None)
    if issued_for is not None:
        return issued_for
    user = request.__dict__.get("user")
    wrapped = getattr(user, "_wrapped", user)
    if user is None or wrapped is empty:  # not loaded by anyone: loading it now would cost a query
        return None
    return wrapped.pk if getattr(wrapped, "is_authenticated", False) else None
