"""The /v2 exception handler of this project: scopes' handler, plus the domain's ApplicationError."""

from rest_framework import exceptions

from oauthclients.exceptions import ApplicationError
from scopes.exception_handlers import api_exception_handler as scopes_exception_handler


def api_exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        exc = exceptions.ValidationError(exc.message)
    return scopes_exception_handler(exc, context)
