from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from examples.bookings_service import apis
from scopes.metadata import protected_resource_metadata_urls

urlpatterns = [
    path("v2/bookings", apis.BookingsApi.as_view()),
    path("v2/teams/<int:teamId>/bookings", apis.TeamBookingsApi.as_view()),
    path("v2/organizations/<int:orgId>/teams/<int:teamId>/bookings", apis.OrganizationTeamBookingsApi.as_view()),
    path("v2/slots", apis.SlotsApi.as_view()),
    path("v2/schema/", SpectacularAPIView.as_view(), name="schema"),
    *protected_resource_metadata_urls(),  # RFC 9728
]
