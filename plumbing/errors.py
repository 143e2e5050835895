"""Error pages: JSON in the API's error shape under /v2 and on the token endpoint, HTML elsewhere."""

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults

from plumbing.paths import API_KINDS, EndpointKind, endpoint_kind

# The database is unreachable or dropped the connection: temporary, so 503 with Retry-After.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5


def is_api(request) -> bool:
    """Under API_PATH_PREFIX: errors in the API's JSON (plumbing.paths says which paths)."""
    return endpoint_kind(request.path_info) in API_KINDS


def api_error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"status": "error", "error": {"code": code, "message": message}}, status=status)


def service_unavailable(request) -> HttpResponse:
    """503 with Retry-After: the /v2 error shape (token endpoint included) or a page; no details.

    RFC 6749 §5.2's error codes describe a request the server refuses; none of them means "try
    again later", so the token endpoint answers in the /v2 shape too and the status says the rest.
    """
    if is_api(request):
        response = api_error(
            "service_unavailable", "The service is temporarily unavailable. Try again in a few seconds.", 503
        )
    else:
        # Rendered without the request: context processors would reach for the session and the
        # user, which live in the database that is down.
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def page_not_found(request, exception=None):
    if is_api(request):
        return api_error("not_found", "No such endpoint.", 404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    # A database failure outside a view (say, saving the session after the view returned) is not
    # seen by plumbing.dbfailure's middleware and lands here: answer the same 503.
    if isinstance(sys.exc_info()[1], DATABASE_UNAVAILABLE):
        return service_unavailable(request)
    if is_api(request):
        return api_error("server_error", "The server could not complete the request. Try again later.", 500)
    return defaults.server_error(request)


def is_oauth_endpoint(request) -> bool:
    """The token, revocation and introspection endpoints answer in RFC 6749 §5.2's shape."""
    return endpoint_kind(request.path_info) == EndpointKind.OAUTH


def bad_request(request, exception=None):
    if is_oauth_endpoint(request):
        response = JsonResponse(
            {"error": "invalid_request", "error_description": "The request could not be read."}, status=400
        )
        response["Cache-Control"] = "no-store"
        return response
    if is_api(request):
        return api_error("bad_request", "The request could not be read.", 400)
    return defaults.bad_request(request, exception)
