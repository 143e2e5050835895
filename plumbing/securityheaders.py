"""Content-Security-Policy on every response (SECURITY.md, "Consent page").

Django 5.2 has no CSP of its own, and one fixed policy needs no package: every page here uses
the project's own stylesheet and the admin's own scripts, with no inline script or style and
no third-party subresource. X-Frame-Options, nosniff, Referrer-Policy and HSTS come from
Django's SecurityMiddleware and XFrameOptionsMiddleware (settings.py).
"""

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "base-uri 'none'",
        "object-src 'none'",
        # Clickjacking: the consent page must never be framed (with X-Frame-Options: DENY for
        # older browsers).
        "frame-ancestors 'none'",
        # No form-action: the consent form's POST is answered with a 302 to the client's
        # redirect_uri on another origin, and Chrome applies form-action to that redirect.
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
