import os
import socket
import uuid
from urllib.parse import urlsplit

import pytest
import redis
from django.core.cache import caches
from django.test import Client

from tests.factories import PASSWORD, make_client, make_user

# CI must prove the shared counts, so there an unreachable Redis fails instead of skipping.
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


@pytest.fixture(autouse=True)
def _fresh_counts():
    """Every test starts with no counts (the test settings' cache is in-process, never Redis)."""
    caches["default"].clear()
    yield
    caches["default"].clear()


@pytest.fixture
def limits(settings):
    """Tighten named limits for one test: limits(token_failures_per_client=(3, 60))."""

    def tighten(**named: tuple[int, int]) -> None:
        unknown = set(named) - set(settings.RATELIMITS)
        assert not unknown, f"no such limits: {unknown}"
        settings.RATELIMITS = {**settings.RATELIMITS, **named}

    return tighten


@pytest.fixture
def approved_confidential(owner):
    created = make_client(owner, redirect_uris=["https://app.example.com/callback"], approve=True)
    return created.client, created.secret.plaintext


@pytest.fixture
def other_confidential(other_developer):
    created = make_client(
        other_developer, name="Other App", redirect_uris=["https://other.example.com/cb"], approve=True
    )
    return created.client, created.secret.plaintext


def _logged_in(user) -> Client:
    browser = Client()
    assert browser.login(username=user.username, password=PASSWORD)
    return browser


@pytest.fixture
def second_browser(db):
    return _logged_in(make_user("seconduser"))


@pytest.fixture
def redis_url():
    """REDIS_URL, else the local server; skips when unreachable, except in CI where it fails."""
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=2).close()
    except OSError as exc:
        message = f"Redis is not reachable at {parts.hostname}:{parts.port or 6379}: {exc}"
        if IN_CI:
            pytest.fail(message + " (CI=true: Redis is required)")
        pytest.skip(message)
    return url


@pytest.fixture
def redis_prefix(redis_url):
    """A key prefix of this test's own on the shared Redis; its keys are deleted afterwards."""
    prefix = f"ratelimit-test-{uuid.uuid4().hex}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()
