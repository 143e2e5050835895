"""The example service's endpoints: each answers with the token's user and granted scopes, so that
what got through, and as whom, is visible from outside."""

import hashlib
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from examples.bookings_service.models import Booking, Call
from scopes.bearer import request_bearer_token
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


def _store() -> bool:
    """Whether this service keeps bookings and records calls (OAUTH_BOOKINGS_STORE; off in a process
    without that setting, such as the bench's in-process reference route)."""
    return getattr(settings, "OAUTH_BOOKINGS_STORE", False)


def _received(request) -> None:
    """Record what this call carried (the token's digest, client, actor, audience): see models.Call."""
    raw = request_bearer_token(request) or ""  # authenticated already: a well-formed header
    token = request.auth
    Call.objects.create(
        token_sha256=hashlib.sha256(raw.encode()).hexdigest(),
        client_id=token.client_id,
        actor=token.actor,
        audience=list(token.audience),
        method=request.method,
    )


def _bookings_of(subject: str) -> list[Booking]:
    """The user's bookings; a user seen for the first time gets a few, so the example shows some."""
    if not Booking.objects.filter(subject=subject).exists():
        today = timezone.now().replace(hour=9, minute=0, second=0, microsecond=0)
        Booking.objects.bulk_create(
            Booking(
                subject=subject,
                title=title,
                start=today + timedelta(days=days),
                end=today + timedelta(days=days, minutes=30),
            )
            for title, days in SEED
        )
    return list(Booking.objects.filter(subject=subject))


def _shown(booking: Booking) -> dict:
    return {
        "id": booking.pk,
        "title": booking.title,
        "start": booking.start.isoformat(),
        "end": booking.end.isoformat(),
        **({"made_by": booking.client_id, "made_through": booking.actor} if booking.client_id else {}),
    }


SEED = (("Intro call", 1), ("Design review", 2), ("Dentist", 5))


class BookingsApi(ScopedApiView):
    scope_resource = "BOOKING"

    @documented()
    def get(self, request):
        """The token's user's bookings."""
        if not _store():
            return _answer(request, [])
        _received(request)
        return _answer(request, [_shown(booking) for booking in _bookings_of(request.auth.subject)])

    @documented(201, request=None)
    def post(self, request):
        """Book: `title` (and optionally `start`, ISO 8601; 30 minutes) for the token's user."""
        if not _store():
            return Response({"status": "error", "error": {"message": "This service keeps no bookings."}}, status=503)
        _received(request)
        body = request.data if isinstance(request.data, dict) else {}
        title = str(body.get("title") or "New booking")[:200]
        start = parse_datetime(str(body.get("start") or "")) or timezone.now() + timedelta(days=7)
        if timezone.is_naive(start):
            start = timezone.make_aware(start, timezone.get_fixed_timezone(0))
        token = request.auth
        booking = Booking.objects.create(
            subject=token.subject,
            title=title,
            start=start,
            end=start + timedelta(minutes=30),
            client_id=token.client_id,
            actor=token.actor,
        )
        return _answer(request, _shown(booking), status=201)


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
