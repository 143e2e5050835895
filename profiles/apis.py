"""GET/PATCH /v2/me (spec §4.4)."""

import re
from functools import cache
from zoneinfo import available_timezones

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from plumbing.openapi import api_errors, www_authenticate
from profiles.models import TimeFormat, WeekStart
from profiles.selectors import profile_get_for_user
from profiles.services import profile_update
from scopes.views import ScopedApiView

LOCALE_RE = re.compile(r"[a-z]{2,3}(-[A-Z]{2})?")


@cache
def _time_zones() -> frozenset[str]:
    return frozenset(available_timezones())


def profile_data(profile) -> dict:
    """The /v2/me `data` object (spec §4.4; fields chosen in docs/choices.md)."""
    user = profile.user
    return {
        "id": user.pk,
        "username": user.username,
        "email": user.email,
        "name": profile.name,
        "timeZone": profile.time_zone,
        "locale": profile.locale,
        "timeFormat": profile.time_format,
        "weekStart": profile.week_start,
    }


class MeApi(ScopedApiView):
    required_scopes = {"GET": "PROFILE_READ", "PATCH": "PROFILE_WRITE"}

    @extend_schema_serializer(component_name="Profile")
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField(source="user.pk")
        username = serializers.CharField(source="user.username")
        email = serializers.EmailField(source="user.email")
        name = serializers.CharField()
        timeZone = serializers.CharField(source="time_zone")
        locale = serializers.CharField()
        timeFormat = serializers.IntegerField(source="time_format")
        weekStart = serializers.CharField(source="week_start")

    @extend_schema_serializer(component_name="ProfileUpdate")
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=255, allow_blank=True, required=False)
        timeZone = serializers.CharField(max_length=64, required=False, source="time_zone")
        locale = serializers.CharField(max_length=16, required=False)
        timeFormat = serializers.ChoiceField(choices=TimeFormat.values, required=False, source="time_format")
        weekStart = serializers.ChoiceField(choices=WeekStart.values, required=False, source="week_start")

        def validate_timeZone(self, value):
            if value not in _time_zones():
                raise serializers.ValidationError("Unknown time zone; use an IANA name such as Europe/Berlin.")
            return value

        def validate_locale(self, value):
            if not LOCALE_RE.fullmatch(value):
                raise serializers.ValidationError("Use a language tag such as en or en-GB.")
            return value

        def validate(self, attrs):
            unknown = sorted(set(self.initial_data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(dict.fromkeys(unknown, "This field is unknown or read-only."))
            return attrs

    _profile_response = OpenApiResponse(
        inline_serializer(
            "ProfileResponse",
            fields={"status": serializers.ChoiceField(choices=["success"]), "data": OutputSerializer()},
        ),
        description="The user's profile (defaults until the user saves one).",
    )
    _bearer_errors = www_authenticate(
        401, description='`Bearer realm="api"`, with `error="invalid_token"` for a bad token.'
    )

    def _render(self, profile):
        # OutputSerializer documents the shape; this builds it without instantiating a serializer
        # (its per-response field copying was the largest DRF cost of GET /v2/me in the bench
        # profile). tests/profiles/test_me_output.py keeps the two identical.
        return Response({"status": "success", "data": profile_data(profile)})

    @extend_schema(
        summary="The token's user",
        tags=["Profile"],
        parameters=[_bearer_errors],
        responses={200: _profile_response, **api_errors(401, 403)},
    )
    def get(self, request):
        """The profile of the token's user: defaults until the user saves one."""
        return self._render(profile_get_for_user(user=request.user))

    @extend_schema(
        summary="Update the token's user's profile",
        tags=["Profile"],
        parameters=[_bearer_errors],
        request=InputSerializer,
        responses={200: _profile_response, **api_errors(400, 401, 403, 413, 415)},
    )
    def patch(self, request):
        """Only the fields sent change; unknown or read-only fields are a 400."""
        if not isinstance(request.data, dict):
            raise serializers.ValidationError("The request body must be a JSON object.")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return self._render(profile_update(user=request.user, **serializer.validated_data))
