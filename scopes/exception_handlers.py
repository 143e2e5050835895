"""One DRF exception handler: every /v2 error is {"status": "error", "error": {"code", "message"}}.

Any service that protects endpoints with scopes uses it (REST_FRAMEWORK["EXCEPTION_HANDLER"]); the
authorization server wraps it (config.exception_handlers) to add its own domain errors.
"""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.views import exception_handler

from scopes.permissions import InsufficientScope
from scopes.resource import metadata_url, resource_uri
from scopes.verifiers import AuthorizationServerUnavailable


class RequestTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "The request body is larger than this server accepts."
    default_code = "request_too_large"


def _message(detail) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{field}: {_message(value)}" for field, value in detail.items())
    if isinstance(detail, list):
        return " ".join(_message(item) for item in detail)
    return str(detail)


def api_exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        # Raised by Django when the parser reads the body; left alone it becomes an HTML 400.
        exc = RequestTooLarge()

    response = exception_handler(exc, context)
    if response is None:
        return None

    if isinstance(exc, exceptions.ValidationError):
        code, details = "validation_error", exc.detail
    elif isinstance(exc, exceptions.NotAuthenticated):
        code, details = "unauthorized", None
    else:
        codes = exc.get_codes() if hasattr(exc, "get_codes") else None
        code, details = (codes if isinstance(codes, str) else "error"), None
    error = {"code": code, "message": _message(exc.detail)}
    if details is not None:
        error["details"] = details
    response.data = {"status": "error", "error": error}

    if isinstance(exc, AuthorizationServerUnavailable):
        response["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, InsufficientScope):
        scope = f', scope="{exc.required}"' if exc.required else ""
        resource = resource_uri()
        # RFC 9728 §5.1: the metadata lists the scopes to ask for when stepping up.
        metadata = f', resource_metadata="{metadata_url(resource)}"' if resource else ""
        response["WWW-Authenticate"] = f'Bearer realm="api", error="insufficient_scope"{scope}{metadata}'
    return response
