"""What a view's scope declaration requires, for one method on one route.

One function serves the request-time check (scopes.permissions), the start-up check
(scopes.checks) and the OpenAPI schema (scopes.openapi), so the three cannot disagree.

A view declares what it needs in one of three ways:

    class BookingListApi(ScopedApiView):
        scope_resource = "BOOKING"          # GET -> BOOKING_READ, POST -> BOOKING_WRITE;
                                            # under /v2/teams/<teamId>/ -> TEAM_BOOKING_*,
                                            # under /v2/organizations/<orgId>/ -> ORG_BOOKING_*

    class MeApi(ScopedApiView):
        required_scopes = {"GET": "PROFILE_READ", "PATCH": "PROFILE_WRITE"}

    class BookingCreateApi(ScopedApiView):
        public_endpoint = True              # creating/cancelling/rescheduling bookings (spec §1)

A view that declares nothing for a method refuses every scoped token there (deny by default).
"""

import re

from scopes.catalog import SCOPES

TEAM_KWARG = "teamId"
ORG_KWARG = "orgId"
# Spec §2.4-2.5 define the levels by path. The URL kwargs name the ids by convention; the path is
# read as well, so that a route naming them differently cannot fall back to a personal scope.
TEAM_PATH = re.compile(r"^/v2/(?:organizations/[^/]+/)?teams/[^/]+(?:/|$)")
ORG_PATH = re.compile(r"^/v2/organizations/[^/]+(?:/|$)")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# Every resource some scope exists for, at some level: BOOKING, MEMBERSHIP, WORKFLOW, ...
RESOURCES = frozenset(re.sub(r"^(?:TEAM_|ORG_)", "", name).rsplit("_", 1)[0] for name in SCOPES)
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE")


def is_public(view) -> bool:
    return bool(getattr(view, "public_endpoint", False))


def level_prefix(path: str, kwarg_names=()) -> str:
    """TEAM_ on team routes, ORG_ on other organization routes, "" on personal ones."""
    if TEAM_KWARG in kwarg_names or TEAM_PATH.match(path):
        return "TEAM_"
    if ORG_KWARG in kwarg_names or ORG_PATH.match(path):
        return "ORG_"
    return ""


def required_scope(view, method: str, path: str, kwarg_names=()) -> str | None:
    """The scope `method` on this route needs; None when the view declares nothing for it.

    The name may not exist (a resource with no scope at the route's level): scopes.checks reports
    that at start, and the request-time check refuses it.
    """
    declared = getattr(view, "required_scopes", None) or {}
    if method in declared:
        return declared[method]
    if method == "HEAD" and "GET" in declared:
        return declared["GET"]
    resource = getattr(view, "scope_resource", None)
    if not resource:
        return None
    access = "READ" if method in SAFE_METHODS else "WRITE"
    return f"{level_prefix(path, kwarg_names)}{resource}_{access}"


def served_methods(view) -> list[str]:
    """The HTTP methods DRF's dispatch finds a handler for (OPTIONS excluded: DRF answers it)."""
    names = getattr(view, "http_method_names", ())
    return [m for m in HTTP_METHODS if m != "OPTIONS" and m.lower() in names and hasattr(view, m.lower())]


def implements(view, method: str) -> bool:
    name = method.lower()
    return name in view.http_method_names and hasattr(view, name)
