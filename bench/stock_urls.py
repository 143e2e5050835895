"""Stock DOT's URLs for the bench: DOT's own views under /stock/o/ and a protected /stock/me."""

from django.http import JsonResponse
from django.urls import include, path
from oauth2_provider.views import ScopedProtectedResourceView

from bench.common import me_payload


class StockMeView(ScopedProtectedResourceView):
    """Scenario 1 on stock DOT: DOT's bearer validation and scope check, then the user."""

    required_scopes = ["read"]

    def get(self, request, *args, **kwargs):
        return JsonResponse(me_payload(request.resource_owner))


urlpatterns = [
    path("stock/o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("stock/me", StockMeView.as_view(), name="stock_me"),
]
