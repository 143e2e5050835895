"""CSRF protection that works with `Referrer-Policy: no-referrer` (SECURITY.md, consent page).

Under that policy a browser sends `Origin: null` and no `Referer` with a same-origin form POST,
so Django's origin check (and, over HTTPS, its referer check) refuses every form. Browsers also
send Fetch Metadata: `Sec-Fetch-Site` is a forbidden header no page can set, and `same-origin`
proves what the origin/referer checks prove. Only then is `Origin: null` or a missing Referer
accepted; the CSRF token itself is still required on every POST.
"""

from django.middleware.csrf import CsrfViewMiddleware


def _same_origin_by_fetch_metadata(request) -> bool:
    return request.META.get("HTTP_SEC_FETCH_SITE") == "same-origin"


class FetchMetadataCsrfViewMiddleware(CsrfViewMiddleware):
    def _origin_verified(self, request):
        if request.META.get("HTTP_ORIGIN") == "null" and _same_origin_by_fetch_metadata(request):
            return True
        return super()._origin_verified(request)

    def _check_referer(self, request):
        if "HTTP_REFERER" not in request.META and _same_origin_by_fetch_metadata(request):
            return
        super()._check_referer(request)
