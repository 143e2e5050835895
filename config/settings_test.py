"""Settings for the test suite: production settings plus test-only defaults."""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-suite-only-not-a-production-key")
os.environ.setdefault("DJANGO_REQUIRE_HTTPS", "0")
os.environ.setdefault("OAUTH_ISSUER", "http://testserver")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
# Replays in the unit tests come milliseconds after the first use; the grace window has its own tests.
os.environ.setdefault("OAUTH_REPLAY_GRACE_SECONDS", "0")
# Signing keys are encrypted under this (tests only; production sets its own, check --deploy insists).
os.environ.setdefault("OAUTH_SIGNING_KEY_ENCRYPTION_KEY", "test-suite-only-signing-key-encryption-key")

# The suite's staff fixtures sign in with force_login (no second factor); tests/accounts turns
# the staff rule on where it tests it.
os.environ.setdefault("OAUTH_STAFF_MFA_REQUIRED", "0")

from config.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}  # noqa: F405

# --- Rate limiting and cache ---
# The suite makes many failing token and login requests from one address in a few seconds:
# every limit is generous here, and tests/plumbing/ratelimit tightens the one it tests. Always the
# in-process cache, so that no test run reads or clears anyone's Redis (REDIS_URL).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 100_000}}}
RATELIMIT_CACHE = "default"  # tests/plumbing/ratelimit/test_postgres_counters.py tests the PostgreSQL counters
RATELIMITS = {name: (1_000_000, period) for name, (_count, period) in RATELIMITS.items()}  # noqa: F405

# The morning view's hourly counts are written when it is read, never after a response: a write
# landing inside a test's query count would make it fail one run in many.
OPERATIONS_HOURLY_FLUSH_SECONDS = None
