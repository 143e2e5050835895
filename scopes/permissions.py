"""Enforcing scope declarations (scopes.declarations) on DRF views (spec §1, §2.3-2.5, §5.5).

An ORG_ grant satisfies the matching TEAM_ requirement. A legacy client's unrestricted token
passes everywhere. A method the view declares nothing for refuses every scoped token.
"""

import logging

from rest_framework import exceptions
from rest_framework.permissions import BasePermission

from scopes.catalog import SCOPES, effective_scopes, sort_scopes
from scopes.declarations import implements, is_public, required_scope

log = logging.getLogger(__name__)


class InsufficientScope(exceptions.PermissionDenied):
    """403 with `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."` (RFC 6750 §3.1)."""

    default_code = "insufficient_scope"

    def __init__(self, *, required: str | None, granted):
        self.required = required
        self.granted = list(granted)
        granted_text = " ".join(sort_scopes(granted)) or "(none)"
        if required is None:
            message = (
                "This endpoint declares no scope, so it does not accept scoped tokens. "
                f"The token grants: {granted_text}."
            )
        else:
            message = f"This endpoint requires the {required} scope. The token grants: {granted_text}."
            team_twin = "ORG_" + required[5:] if required.startswith("TEAM_") else None
            if team_twin in SCOPES:
                message = (
                    f"This endpoint requires the {required} scope (or {team_twin}). The token grants: {granted_text}."
                )
        super().__init__(detail=message, code="insufficient_scope")


class HasRequiredScope(BasePermission):
    def has_permission(self, request, view):
        if is_public(view):
            return True
        token = request.auth
        if token is None:
            raise exceptions.NotAuthenticated("An access token is required: Authorization: Bearer <token>.")
        if not implements(view, request.method):
            # DRF answers 405 after this check; a scope error would send the client off to
            # re-authorize for a method that no scope can make work.
            return True
        if token.unrestricted:
            # A legacy client's unrestricted token (spec §2.1, §5.6).
            return True
        needed = required_scope(view, request.method, request.path_info, getattr(view, "kwargs", None) or {})
        if needed is not None and needed not in SCOPES:
            # scopes.checks reports this at start; refuse rather than guess if it was ignored.
            log.error("View %s derives unknown scope %s; refusing the request", type(view).__name__, needed)
            raise InsufficientScope(required=None, granted=token.scopes)
        if needed is None or needed not in effective_scopes(token.scopes):
            raise InsufficientScope(required=needed, granted=token.scopes)
        return True


def is_scoped(view) -> bool:
    """Whether a view (class or instance) enforces scope declarations with HasRequiredScope."""
    classes = getattr(view, "permission_classes", None) or ()
    return any(isinstance(cls, type) and issubclass(cls, HasRequiredScope) for cls in classes)
