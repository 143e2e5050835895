"""Scope declarations with one mistake each, for the start-up check's tests (never the project's URLs)."""

from django.urls import path

from tests.scopes.urls_for_tests import EchoApi


class TypoApi(EchoApi):
    required_scopes = {"GET": "BOOKINGS_READ"}


class UnservedMethodApi(EchoApi):
    required_scopes = {"GET": "BOOKING_READ", "PUT": "BOOKING_WRITE"}

    get = EchoApi._echo
    post = patch = delete = None


class LowerCaseMethodApi(EchoApi):
    required_scopes = {"get": "BOOKING_READ"}


class UnknownResourceApi(EchoApi):
    scope_resource = "BOOKINGS"


class PersonalOnlyResourceApi(EchoApi):
    scope_resource = "WEBHOOK"  # WEBHOOK_* and ORG_WEBHOOK_* exist; TEAM_WEBHOOK_* do not


urlpatterns = [
    path("v2/typo", TypoApi.as_view()),
    path("v2/unserved", UnservedMethodApi.as_view()),
    path("v2/lowercase", LowerCaseMethodApi.as_view()),
    path("v2/unknown-resource", UnknownResourceApi.as_view()),
    path("v2/teams/<int:teamId>/webhooks", PersonalOnlyResourceApi.as_view()),
    path("v2/webhooks", PersonalOnlyResourceApi.as_view()),  # fine here: WEBHOOK_* exist
]
