"""Test-only /v2 endpoints declared the ways the scheduling endpoints will declare theirs.

Mounted next to the real project URLs with `@pytest.mark.urls("tests.scopes.urls_for_tests")`.
Every view answers with which view ran and for whom, so a test sees that the request got through
to the handler as the token's user and not merely that no error was raised.
"""

from django.urls import include, path
from rest_framework.response import Response

from scopes.views import ScopedApiView


class EchoApi(ScopedApiView):
    def _echo(self, request, **kwargs):
        user = request.user
        return Response(
            {
                "status": "success",
                "data": {"view": type(self).__name__, "method": request.method, "user": user.pk if user else None},
            }
        )

    get = post = patch = delete = _echo


class BookingsApi(EchoApi):
    # GET -> *_BOOKING_READ, POST/PATCH/DELETE -> *_BOOKING_WRITE; the level comes from the route.
    scope_resource = "BOOKING"


class MembershipsApi(EchoApi):
    # Team and organization levels only: there is no personal MEMBERSHIP scope.
    scope_resource = "MEMBERSHIP"


class WorkflowsApi(EchoApi):
    # TEAM_WORKFLOW_* exist, ORG_WORKFLOW_* do not.
    scope_resource = "WORKFLOW"


class WebhooksApi(EchoApi):
    # WEBHOOK_* and ORG_WEBHOOK_* exist, TEAM_WEBHOOK_* do not.
    scope_resource = "WEBHOOK"


class SchedulesApi(EchoApi):
    # Explicit per-method declaration; DELETE is implemented but declared for no scope.
    required_scopes = {"GET": "SCHEDULE_READ", "POST": "SCHEDULE_WRITE"}


class BookingCreateApi(EchoApi):
    # Spec §1: creating, cancelling and rescheduling bookings need no scope.
    public_endpoint = True


class UndeclaredApi(EchoApi):
    pass


urlpatterns = [
    path("v2/bookings", BookingsApi.as_view()),
    path("v2/bookings/create", BookingCreateApi.as_view()),
    path("v2/teams/<int:teamId>/bookings", BookingsApi.as_view()),
    path("v2/organizations/<int:orgId>/bookings", BookingsApi.as_view()),
    path("v2/organizations/<int:orgId>/teams/<int:teamId>/bookings", BookingsApi.as_view()),
    path("v2/organizations/<int:orgId>/memberships", MembershipsApi.as_view()),
    path("v2/organizations/<int:orgId>/teams/<int:teamId>/memberships", MembershipsApi.as_view()),
    path("v2/teams/<int:teamId>/workflows", WorkflowsApi.as_view()),
    path("v2/organizations/<int:orgId>/workflows", WorkflowsApi.as_view()),
    path("v2/webhooks", WebhooksApi.as_view()),
    path("v2/teams/<int:teamId>/webhooks", WebhooksApi.as_view()),
    # Team and organization routes whose URL names the ids differently from teamId / orgId.
    path("v2/teams/<int:id>/bookings-by-id", BookingsApi.as_view()),
    path("v2/organizations/<slug:org>/bookings-by-slug", BookingsApi.as_view()),
    path("v2/schedules", SchedulesApi.as_view()),
    path("v2/undeclared", UndeclaredApi.as_view()),
    path("", include("config.urls")),
]
