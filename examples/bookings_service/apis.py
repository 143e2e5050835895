"""The example service's endpoints: each answers with the token's user and granted scopes, so that
what got through, and as whom, is visible from outside."""

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from scopes.views import ScopedApiView

ANSWER = inline_serializer(
    "BookingsAnswer",
    fields={
        "username": serializers.CharField(allow_null=True, help_text="The token's user; null without a token."),
        "scopes": serializers.ListField(child=serializers.CharField(), help_text="The token's granted scopes."),
        "data": serializers.JSONField(),
    },
)
ERROR = inline_serializer(
    "ApiError",
    fields={"status": serializers.CharField(), "error": serializers.DictField()},
)
ERRORS = {
    401: OpenApiResponse(ERROR, description="No token, or an invalid, expired or revoked one."),
    403: OpenApiResponse(ERROR, description="The token lacks the required scope."),
    503: OpenApiResponse(ERROR, description="The authorization server could not be asked (Retry-After)."),
}


def documented(status: int = 200, **extra):
    return extend_schema(tags=["Bookings"], responses={status: ANSWER, **ERRORS}, **extra)


def _answer(request, data, *, status=200, **extra):
    user = request.user
    token = request.auth
    return Response(
        {
            "username": user.get_username() if user is not None else None,
            "scopes": list(token.scopes) if token is not None else [],
            **extra,
            "data": data,
        },
        status=status,
    )


class BookingsApi(ScopedApiView):
    scope_resource = "BOOKING"

    @documented()
    def get(self, request):
        """The token's user's bookings."""
        return _answer(request, [])

    @documented(201, request=None)
    def post(self, request):
        """Add a guest to, or confirm, one of the token's user's bookings (an example write)."""
        return _answer(request, {"accepted": True}, status=201)


class TeamBookingsApi(ScopedApiView):
    scope_resource = "BOOKING"  # on /v2/teams/<teamId>/: TEAM_BOOKING_READ (ORG_BOOKING_READ passes)

    @documented()
    def get(self, request, teamId):
        """A team's bookings."""
        return _answer(request, [], teamId=teamId)


class OrganizationTeamBookingsApi(ScopedApiView):
    required_scopes = {"GET": "ORG_BOOKING_READ"}

    @documented()
    def get(self, request, orgId, teamId):
        """A team's bookings, seen across the organization."""
        return _answer(request, [], orgId=orgId, teamId=teamId)


class SlotsApi(ScopedApiView):
    public_endpoint = True

    @extend_schema(tags=["Bookings"], responses={200: ANSWER, 401: ERRORS[401], 503: ERRORS[503]})
    def get(self, request):
        """Free slots to book: public, no access token needed."""
        return _answer(request, [{"start": "2026-12-01T09:00:00Z", "end": "2026-12-01T09:30:00Z"}])
