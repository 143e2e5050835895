"""/healthz and /readyz (docs/operating.md, "Health and readiness"): plain JSON, never cached."""

from django.http import HttpRequest, JsonResponse

from operations.readiness import readiness


def _uncached(response: JsonResponse) -> JsonResponse:
    response["Cache-Control"] = "no-store"
    # Answered before the middleware that would add it (operations.middleware): with a length, the
    # answer is one plain body, not chunks, which every balancer's probe reads.
    response["Content-Length"] = str(len(response.content))
    return response


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers. No database, so a database outage restarts nothing."""
    return _uncached(JsonResponse({"status": "ok"}))


def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: send me requests. 503 while draining, or while anything a request needs is missing."""
    ready, checks = readiness()
    if ready:
        return _uncached(JsonResponse({"status": "ready", "checks": checks}))
    status = "draining" if "shutdown" in checks else "unavailable"
    return _uncached(JsonResponse({"status": status, "checks": checks}, status=503))
