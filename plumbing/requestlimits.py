"""Refuse oversized or unreadable requests to the OAuth and API paths before any view runs.

SECURITY.md: "Oversized inputs are refused before any hashing". Every legitimate request here is
small — the longest parameters are a 2,048-character state, a 2,000-character scope and a
registered redirect URI — so a query string over 8 KB, or an OAuth request body over 64 KB, is
refused from its headers alone, before the body is read, parsed, hashed or looked up. A query
string or form body that is not UTF-8 is refused too: Django would otherwise decode it with
replacement characters, and a `state` would no longer come back byte-identical.

The answer has the shape each caller expects: RFC 6749 §5.2 JSON (400 invalid_request) on the
token, revocation and introspection endpoints, the API's error JSON elsewhere under /v2, and the
error page on the authorization endpoint (which never redirects an unread request).

/v2 resource bodies are left to DATA_UPLOAD_MAX_MEMORY_SIZE and the API's own 413.
"""

from urllib.parse import unquote_to_bytes

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.shortcuts import render

from plumbing.paths import EndpointKind, endpoint_kind

MAX_QUERY_STRING = 8 * 1024
MAX_OAUTH_BODY = 64 * 1024

FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"


class Refusal(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# Which requests are checked, and in which shape each is refused (plumbing.paths says which kind a
# path is): token, revocation, introspection: RFC 6749 §5.2; the authorization pages and logout:
# the error page; the rest of /v2: the API's error JSON.
_CHECKED = {
    EndpointKind.OAUTH: "oauth",
    EndpointKind.AUTHORIZATION: "authorize",
    EndpointKind.OAUTH_PAGE: "authorize",
    EndpointKind.API: "api",
}


def _kind(path: str) -> str | None:
    return _CHECKED.get(endpoint_kind(path))


def _is_utf8(raw: str) -> bool:
    """Whether a urlencoded string decodes to UTF-8 once its %-escapes are undone."""
    try:
        data = raw.encode("latin-1")  # WSGI hands bytes over as latin-1 text (PEP 3333)
    except UnicodeEncodeError:
        data = raw.encode("utf-8")
    try:
        unquote_to_bytes(data.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _content_length(request) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def check_request(request, kind: str) -> None:
    """Raise Refusal for a request no view should spend work on."""
    query = request.META.get("QUERY_STRING", "")
    if len(query) > MAX_QUERY_STRING:
        raise Refusal(414, "uri_too_long", f"The query string is longer than {MAX_QUERY_STRING} bytes.")
    if not _is_utf8(query):
        raise Refusal(400, "bad_request", "The query string is not valid UTF-8.")
    if kind == "api":
        return
    if _content_length(request) > MAX_OAUTH_BODY:
        raise Refusal(413, "request_too_large", f"The request body is larger than {MAX_OAUTH_BODY} bytes.")
    if request.content_type == FORM_CONTENT_TYPE and request.method == "POST":
        charset = (request.content_params.get("charset") or "utf-8").lower()
        if charset not in ("utf-8", "utf8"):
            raise Refusal(400, "bad_request", "A form body must be UTF-8 (RFC 6749 Appendix B).")
        try:
            body = request.body
        except RequestDataTooBig:
            # DATA_UPLOAD_MAX_MEMORY_SIZE is set below MAX_OAUTH_BODY: the view refuses it as it
            # always has (and the rate limiter sees that refusal).
            return
        if not _is_utf8(body.decode("latin-1")):
            raise Refusal(400, "bad_request", "The request body is not valid UTF-8.")


def refusal_response(request, kind: str, refusal: Refusal):
    if kind == "oauth":
        # RFC 6749 §5.2: every error of these endpoints is a 400 with this body.
        response = JsonResponse({"error": "invalid_request", "error_description": refusal.message}, status=400)
        response["Cache-Control"] = "no-store"
        response["Pragma"] = "no-cache"
        return response
    if kind == "api":
        error = {"code": refusal.code, "message": refusal.message}
        return JsonResponse({"status": "error", "error": error}, status=refusal.status)
    context = {"title": "Invalid request", "message": refusal.message}
    return render(request, "oauth/error.html", context, status=refusal.status)


class RequestLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        kind = _kind(request.path_info)
        if kind is not None:
            try:
                check_request(request, kind)
            except Refusal as refusal:
                return refusal_response(request, kind, refusal)
        return self.get_response(request)
