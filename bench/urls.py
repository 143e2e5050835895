"""The bench's URLconf: the project's own (config.urls), plus the floor views under /floor/, plus
the example resource server's bookings endpoint verifying tokens in this process (/local/), the
reference for scenario 6's calls through the example service."""

from django.urls import include, path

from bench import floor
from config.urls import handler400, handler404, handler500
from config.urls import urlpatterns as project_urlpatterns
from examples.bookings_service.apis import BookingsApi

__all__ = ["handler400", "handler404", "handler500", "urlpatterns"]

urlpatterns = [
    path("floor/", include(floor.urlpatterns)),
    path("local/v2/bookings", BookingsApi.as_view()),
    *project_urlpatterns,
]
