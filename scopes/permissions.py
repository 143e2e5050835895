"""Declaring and enforcing scopes on DRF views (spec §1, §2.3-2.5, §5.5).

A view declares what it needs in one of three ways:

    class BookingListApi(ScopedApiView):
        scope_resource = "BOOKING"          # GET -> BOOKING_READ, POST -> BOOKING_WRITE;
                                            # under /v2/teams/<teamId>/ -> TEAM_BOOKING_*,
                                            # under /v2/organizations/<orgId>/ -> ORG_BOOKING_*

    class MeApi(ScopedApiView):
        required_scopes = {"GET": "PROFILE_READ", "PATCH": "PROFILE_WRITE"}

    class BookingCreateApi(ScopedApiView):
        public_endpoint = True              # creating/cancelling/rescheduling bookings (spec §1)

A view that declares nothing refuses every scoped token (deny by default). An ORG_ grant
satisfies the matching TEAM_ requirement. A legacy client's unrestricted token passes everywhere.
"""

import logging
import re

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from scopes.catalog import SCOPES, effective_scopes, sort_scopes

log = logging.getLogger(__name__)

TEAM_KWARG = "teamId"
ORG_KWARG = "orgId"
# Spec §2.4-2.5 define the levels by path. The URL kwargs name the ids by convention; the path is
# read as well, so that a route naming them differently cannot fall back to a personal scope.
TEAM_PATH = re.compile(r"^/v2/(?:organizations/[^/]+/)?teams/[^/]+(?:/|$)")
ORG_PATH = re.compile(r"^/v2/organizations/[^/]+(?:/|$)")


class InsufficientScope(exceptions.PermissionDenied):
    """403 with `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."` (RFC 6750 §3.1)."""

    default_code = "insufficient_scope"

    def __init__(self, *, required: str | None, granted: list[str]):
        self.required = required
        self.granted = granted
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


def required_scope(view, request) -> str | None:
    """The scope this request needs, from the view's declaration and the route's level."""
    declared = getattr(view, "required_scopes", None) or {}
    if request.method in declared:
        return declared[request.method]
    if request.method == "HEAD" and "GET" in declared:
        return declared["GET"]
    resource = getattr(view, "scope_resource", None)
    if not resource:
        return None
    access = "READ" if request.method in SAFE_METHODS else "WRITE"
    name = f"{_level_prefix(view, request)}{resource}_{access}"
    if name not in SCOPES:
        # No such scope at this level: a declaration mistake. Refuse rather than guess.
        log.error("View %s derives unknown scope %s; refusing the request", type(view).__name__, name)
        return "INVALID_SCOPE_DECLARATION"
    return name


def _level_prefix(view, request) -> str:
    """TEAM_ on team routes, ORG_ on other organization routes, "" on personal ones."""
    kwargs = getattr(view, "kwargs", None) or {}
    path = request.path_info
    if TEAM_KWARG in kwargs or TEAM_PATH.match(path):
        return "TEAM_"
    if ORG_KWARG in kwargs or ORG_PATH.match(path):
        return "ORG_"
    return ""


def _implements(view, method: str) -> bool:
    """Whether DRF's dispatch would find a handler for `method` on this view."""
    name = method.lower()
    return name in view.http_method_names and hasattr(view, name)


class HasRequiredScope(BasePermission):
    def has_permission(self, request, view):
        if getattr(view, "public_endpoint", False):
            return True
        access_token = request.auth
        if access_token is None:
            raise exceptions.NotAuthenticated("An access token is required: Authorization: Bearer <token>.")
        if not _implements(view, request.method):
            # DRF answers 405 after this check; a scope error would send the client off to
            # re-authorize for a method that no scope can make work.
            return True
        granted = access_token.scope.split()
        if not granted:
            # A legacy client's unrestricted token (spec §2.1, §5.6).
            return True
        needed = required_scope(view, request)
        if needed is None or needed not in effective_scopes(granted):
            raise InsufficientScope(required=needed, granted=granted)
        return True
