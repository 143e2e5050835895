"""`manage.py check --deploy`: the rate-limit cache must be shared when several workers may serve, and
passwords are hashed with Argon2id at or above the documented parameters."""

import pytest
from argon2.low_level import Type
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from accounts.hashers import MINIMUM_MEMORY_KIB, MINIMUM_TIME_COST, Argon2idPasswordHasher
from config.checks import password_hasher_strong, ratelimit_cache_shared

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


# --- config.W006: the first password hasher is Argon2id at or above the documented parameters ---------

PRODUCTION_HASHERS = ["accounts.hashers.Argon2idPasswordHasher", "django.contrib.auth.hashers.PBKDF2PasswordHasher"]


class WeakArgon2idPasswordHasher(Argon2idPasswordHasher):
    memory_cost = MINIMUM_MEMORY_KIB - 1024


class OneRoundArgon2idPasswordHasher(Argon2idPasswordHasher):
    time_cost = MINIMUM_TIME_COST - 1


class Argon2iPasswordHasher(Argon2idPasswordHasher):
    def params(self):
        params = super().params()
        params.type = Type.I
        return params


def test_the_production_hasher_passes():
    from config import settings as production

    assert production.PASSWORD_HASHERS == PRODUCTION_HASHERS


@pytest.mark.parametrize(
    "first",
    [
        "accounts.hashers.Argon2idPasswordHasher",
        # Django's own Argon2id (m = 100 MiB, t = 2, p = 8): above the floor, if heavy (docs/configuration.md).
        "django.contrib.auth.hashers.Argon2PasswordHasher",
    ],
)
def test_argon2id_at_or_above_the_floor_is_no_warning(settings, first):
    settings.PASSWORD_HASHERS = [first, "django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    assert password_hasher_strong() == []


@pytest.mark.parametrize(
    ("first", "named"),
    [
        ("django.contrib.auth.hashers.PBKDF2PasswordHasher", "PBKDF2PasswordHasher"),
        ("django.contrib.auth.hashers.MD5PasswordHasher", "MD5PasswordHasher"),
        (f"{__name__}.WeakArgon2idPasswordHasher", "m = 18432 KiB"),
        (f"{__name__}.OneRoundArgon2idPasswordHasher", "t = 1"),
        (f"{__name__}.Argon2iPasswordHasher", "(i, "),
    ],
)
def test_any_other_first_hasher_is_a_deploy_warning(settings, first, named):
    settings.PASSWORD_HASHERS = [first, *PRODUCTION_HASHERS]
    (warning,) = password_hasher_strong()
    assert warning.id == "config.W006" and named in warning.msg
    with pytest.raises(SystemCheckError, match="config.W006"):
        call_command("check", "--deploy", "--fail-level", "WARNING", "--tag", "security")
