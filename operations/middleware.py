"""The operations middleware, first in MIDDLEWARE after the request id.

/healthz and /readyz from HEALTH_CHECK_NETWORKS (the load balancer's addresses, by the socket's
peer) are answered here, before the HTTPS redirect, the host check, the rate limits and the
sessions: a balancer probes over plain HTTP with its own Host header. From anywhere else they go
through the whole stack like any page. /metrics likewise, for METRICS_NETWORKS or its own bearer
token (operations.metrics), and nowhere else.

Every other request gets one access line (logger `operations.access`) with its latency, and is
counted for the metrics: in memory and in the process's Prometheus files, no database statement.
In text its message holds every field ("POST /v2/auth/oauth2/token status=200 latency_ms=..."); in
JSON lines (LOG_FORMAT=json) each field is a key of its own, so the message is the method and path
alone: the fields once, not twice, in a line about half as long and cheaper to write (the access
line is the one record every request pays for; docs/performance.md, "The benchmark with it on").
"""

import logging
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from operations import access, hourly, metrics, views
from operations.networks import peer_in
from plumbing.paths import endpoint_name

HEALTH_VIEWS = {"/healthz": views.healthz, "/readyz": views.readyz}
MAX_LOGGED_PATH = 200

access_log = logging.getLogger("operations.access")


def _printable(text: str) -> str:
    # A path with CR/LF must not forge log lines.
    return text.encode("unicode_escape").decode("ascii")[:MAX_LOGGED_PATH]


class OperationsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.fields_in_message = settings.LOG_FORMAT != "json"

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        health = HEALTH_VIEWS.get(path)
        if health is not None and peer_in(request, settings.HEALTH_CHECK_NETWORKS):
            return health(request)
        if path == "/metrics" and metrics.metrics_allowed(request):
            return metrics.metrics(request)
        started = time.perf_counter()
        response = self.get_response(request)
        latency = time.perf_counter() - started
        self._observed(request, response, path, latency)
        return response

    def _observed(self, request: HttpRequest, response: HttpResponse, path: str, latency: float) -> None:
        endpoint = endpoint_name(path)
        fields = {
            "method": request.method,
            "path": _printable(path),
            "status": response.status_code,
            "latency_ms": round(latency * 1000, 2),
        }
        if endpoint is not None:
            fields["endpoint"] = endpoint
            client_id = access.client_id_of(request, endpoint)
            if client_id is not None:
                fields["client_id"] = _printable(client_id)
        if endpoint == "token" and request.method == "POST":
            fields["grant_type"] = access.grant_type_of(request)
            fields["outcome"] = outcome = access.token_outcome(response)
            if outcome == "issued":
                hourly.count(hourly.TOKENS_ISSUED)
            else:
                hourly.count(hourly.TOKENS_REFUSED)
                if fields.get("client_id"):
                    hourly.count(hourly.REFUSALS_BY_CLIENT, fields["client_id"])
        metrics.request_observed(
            endpoint,
            status=response.status_code,
            latency=latency,
            grant_type=fields.get("grant_type"),
            outcome=fields.get("outcome"),
        )
        user_id = access.user_id_of(request)
        if user_id is not None:
            fields["user_id"] = user_id
        if not access_log.isEnabledFor(logging.INFO):
            return
        if self.fields_in_message:
            described = " ".join(f"{key}={value}" for key, value in fields.items() if key not in ("method", "path"))
            access_log.info("%s %s %s", fields["method"], fields["path"], described, extra=fields)
        else:
            access_log.info("%s %s", fields["method"], fields["path"], extra=fields)
