"""The operations middleware, first in MIDDLEWARE (after the request id).

/healthz and /readyz from HEALTH_CHECK_NETWORKS (the load balancer's addresses, by the socket's
peer) are answered here, before the HTTPS redirect, the host check, the rate limits and the
sessions: a balancer probes over plain HTTP with its own Host header. From anywhere else they go
through the whole stack like any page.
"""

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from operations import views
from operations.networks import peer_in

HEALTH_VIEWS = {"/healthz": views.healthz, "/readyz": views.readyz}


class OperationsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        health = HEALTH_VIEWS.get(path)
        if health is not None and peer_in(request, settings.HEALTH_CHECK_NETWORKS):
            return health(request)
        return self.get_response(request)
