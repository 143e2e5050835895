"""`manage.py check --deploy`: the rate-limit cache must be shared when several workers may serve."""

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from config.checks import ratelimit_cache_shared

LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
REDIS = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379/0"}}


@pytest.fixture(autouse=True)
def _no_worker_count(monkeypatch):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)


def test_a_per_process_cache_is_a_deploy_warning(settings):
    settings.CACHES = LOCMEM
    settings.RATELIMIT_ENABLED = True
    (warning,) = ratelimit_cache_shared()
    assert warning.id == "config.W001" and "REDIS_URL" in warning.hint


def test_check_deploy_reports_it(settings):
    settings.CACHES = LOCMEM
    settings.RATELIMIT_ENABLED = True
    with pytest.raises(SystemCheckError, match="config.W001"):
        call_command("check", "--deploy", "--fail-level", "WARNING", "--tag", "security")


@pytest.mark.parametrize(
    "caches, enabled, workers",
    [(REDIS, True, None), (LOCMEM, False, None), (LOCMEM, True, "1")],
)
def test_no_warning_when_counts_are_shared_limits_are_off_or_one_worker_serves(
    settings, monkeypatch, caches, enabled, workers
):
    settings.CACHES = caches
    settings.RATELIMIT_ENABLED = enabled
    if workers:
        monkeypatch.setenv("WEB_CONCURRENCY", workers)
    assert ratelimit_cache_shared() == []


def test_a_plain_check_does_not_warn(settings):
    settings.CACHES = LOCMEM
    call_command("check", "--fail-level", "WARNING")  # deploy checks only with --deploy


def test_loopback_client_metadata_is_a_deploy_warning(settings):
    from config.checks import client_metadata_loopback_off

    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    (warning,) = client_metadata_loopback_off()
    assert warning.id == "config.W002" and "production" in warning.hint
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = False
    assert client_metadata_loopback_off() == []
