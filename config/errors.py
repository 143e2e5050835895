"""Error pages: JSON in the API's error shape under /v2 and on the token endpoint, HTML elsewhere."""

from django.http import JsonResponse
from django.views import defaults


def _is_api(request) -> bool:
    return request.path.startswith("/v2/") or request.path == "/v2"


def _api_error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"status": "error", "error": {"code": code, "message": message}}, status=status)


def page_not_found(request, exception=None):
    if _is_api(request):
        return _api_error("not_found", "No such endpoint.", 404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        return _api_error("server_error", "The server could not complete the request. Try again later.", 500)
    return defaults.server_error(request)


def bad_request(request, exception=None):
    if _is_api(request):
        return _api_error("bad_request", "The request could not be read.", 400)
    return defaults.bad_request(request, exception)
