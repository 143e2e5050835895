"""Settings for the test suite: production settings plus test-only defaults."""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-suite-only-not-a-production-key")
os.environ.setdefault("DJANGO_REQUIRE_HTTPS", "0")
os.environ.setdefault("OAUTH_ISSUER", "http://testserver")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")

from config.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}  # noqa: F405
