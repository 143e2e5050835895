"""`check --deploy --database default` means what it says: silent on a correct production
configuration, and the checks it silences are replaced (operations.E001) or do not apply."""

import pytest
from django.core.checks import run_checks

from config import settings as production_settings
from signing.keys import signing_key_create


@pytest.fixture
def production(settings, monkeypatch):
    """What docs/deploying.md sets: debug off, HTTPS, a long secret key, Redis, both signing keys."""
    settings.DEBUG = False
    settings.SECRET_KEY = "k" * 20 + "production-only-random-looking-value-0123456789"
    settings.ALLOWED_HOSTS = ["auth.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}}
    settings.OAUTH_STAFF_MFA_REQUIRED = True  # docs/accounts.md: on in production (accounts.W001 when off)
    settings.PASSWORD_HASHERS = production_settings.PASSWORD_HASHERS  # the suite's MD5 would be config.W006
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    signing_key_create(algorithm="ES256")
    signing_key_create(algorithm="RS256")


def _reported(**kwargs):
    return [m.id for m in run_checks(include_deployment_checks=True, databases=["default"]) if not m.is_silenced()]


@pytest.mark.django_db
def test_a_correct_production_configuration_passes_with_no_warning(production):
    assert _reported() == []


@pytest.mark.django_db
def test_postgresql_without_redis_passes_with_no_warning(production, settings):
    # config/settings.py's caches then: the default one (allauth's security state) in the table
    # `migrate` makes, the limiter's counters in theirs.
    settings.CACHES = {
        "default": {"BACKEND": "plumbing.sharedcache.SharedStateCache"},
        "ratelimit": {"BACKEND": "plumbing.countercache.PostgresCounterCache", "LOCATION": "ratelimit_counters"},
    }
    settings.RATELIMIT_CACHE = "ratelimit"
    assert _reported() == []


@pytest.mark.django_db
def test_the_real_warnings_still_speak(production, settings):
    # Per process, with several workers: the limits multiply (W001) and a used code passes again (W005).
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert sorted(_reported()) == ["config.W001", "config.W005"]


@pytest.mark.django_db
def test_a_weaker_password_hasher_is_a_real_warning(production, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    assert _reported() == ["config.W006"]


@pytest.mark.django_db
def test_without_our_csrf_middleware_the_silenced_django_warning_becomes_our_error(production, settings):
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != "plumbing.csrf.FetchMetadataCsrfViewMiddleware"]
    assert "operations.E001" in _reported()


def test_each_silenced_check_is_one_that_does_not_apply(settings):
    assert sorted(settings.SILENCED_SYSTEM_CHECKS) == [
        "oauth2_provider.W008",
        "oauth2_provider.W010",
        "security.W003",
        "security.W021",
    ]


@pytest.mark.django_db
def test_staff_without_a_second_factor_is_a_real_warning(production, settings):
    settings.OAUTH_STAFF_MFA_REQUIRED = False
    assert _reported() == ["accounts.W001"]
