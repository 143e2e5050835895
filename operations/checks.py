"""Deployment checks of the operations app (`manage.py check --deploy`).

Django's security.W003 (no CsrfViewMiddleware) is silenced in settings because
plumbing.csrf.FetchMetadataCsrfViewMiddleware replaces it; this check says so only while that is
true, so that the silence cannot outlive the reason for it.
"""

from django.conf import settings
from django.core.checks import Error, Tags, register

CSRF_MIDDLEWARE = "plumbing.csrf.FetchMetadataCsrfViewMiddleware"


@register(Tags.security)
def csrf_middleware_installed(app_configs=None, **kwargs) -> list[Error]:
    if CSRF_MIDDLEWARE in settings.MIDDLEWARE or "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE:
        return []
    return [
        Error(
            f"No CSRF middleware: neither {CSRF_MIDDLEWARE} nor Django's CsrfViewMiddleware is in MIDDLEWARE, so "
            "the consent, login and developer forms are open to cross-site requests.",
            hint=f"Put {CSRF_MIDDLEWARE} back in MIDDLEWARE (after SessionMiddleware and CommonMiddleware).",
            id="operations.E001",
        )
    ]
