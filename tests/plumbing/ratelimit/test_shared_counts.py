"""Counts shared by server processes through Redis (REDIS_URL), and what happens without a cache."""

import logging
import pickle
import threading
import time
import uuid
from urllib.parse import urlencode

import redis
from django.core.cache import caches
from django.test import Client

from plumbing.ratelimit import Window
from tests.oauthflows.helpers import TOKEN
from tests.plumbing.ratelimit.settings_probe import production_settings

REDIS_BACKEND = "django.core.cache.backends.redis.RedisCache"
LOCMEM_BACKEND = "django.core.cache.backends.locmem.LocMemCache"


def guess(name="guess"):
    data = {"grant_type": "refresh_token", "refresh_token": "x" * 43, "client_id": name, "client_secret": "cs_wrong"}
    return Client().post(
        TOKEN, data=urlencode(data), content_type="application/x-www-form-urlencoded", REMOTE_ADDR="198.51.100.1"
    )


def two_processes(settings, backend, location, prefix=""):
    """Two cache aliases with their own client and connections, as two server processes have."""
    settings.CACHES = {
        **settings.CACHES,
        "process_a": {"BACKEND": backend, "LOCATION": location, "KEY_PREFIX": prefix},
        "process_b": {"BACKEND": backend, "LOCATION": location, "KEY_PREFIX": prefix},
    }
    return "process_a", "process_b"


def test_two_processes_on_one_redis_share_failure_counts(db, settings, limits, redis_url, redis_prefix):
    first, second = two_processes(settings, REDIS_BACKEND, redis_url, redis_prefix)
    assert caches[first]._cache.get_client() is not caches[second]._cache.get_client()
    limits(token_failures_per_address=(3, 60))
    settings.RATELIMIT_CACHE = first
    for _ in range(3):
        assert guess().status_code == 401
    settings.RATELIMIT_CACHE = second
    refused = guess()
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60


def test_per_process_caches_do_not_share_counts(db, settings, limits):
    # Why production with several workers needs REDIS_URL (and proof the test above can fail).
    settings.CACHES = {
        **settings.CACHES,
        "process_a": {"BACKEND": LOCMEM_BACKEND, "LOCATION": f"a-{uuid.uuid4().hex}"},
        "process_b": {"BACKEND": LOCMEM_BACKEND, "LOCATION": f"b-{uuid.uuid4().hex}"},
    }
    limits(token_failures_per_address=(3, 60))
    settings.RATELIMIT_CACHE = "process_a"
    for _ in range(3):
        assert guess().status_code == 401
    settings.RATELIMIT_CACHE = "process_b"
    assert guess().status_code == 401


def test_concurrent_counting_on_redis_loses_no_hit(settings, redis_url, redis_prefix):
    first, _second = two_processes(settings, REDIS_BACKEND, redis_url, redis_prefix)
    window = Window.of("concurrency", uuid.uuid4().hex, 60)
    seen, lock = [], threading.Lock()

    def worker():
        counts = [window.count(caches[first], time.time()) for _ in range(25)]  # caches[] is per thread
        with lock:
            seen.extend(counts)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == list(range(1, 201))  # every increment atomic: each count seen once
    assert window.used(caches[first]) == 200


def test_redis_url_makes_every_process_count_in_redis(redis_url):
    """A separate interpreter on production settings with REDIS_URL counts; this one sees it."""
    value = uuid.uuid4().hex
    seen = production_settings(
        "from django.core.cache import caches\n"
        "from plumbing.ratelimit import Window\n"
        "import time\n"
        f"window = Window.of('probe', {value!r}, 600)\n"
        "counts = [window.count(caches[settings.RATELIMIT_CACHE], time.time()) for _ in range(3)]\n"
        "print(json.dumps([settings.CACHES['default']['BACKEND'], window.key, counts]))",
        REDIS_URL=redis_url,
    )
    backend, key, counts = seen
    assert backend == REDIS_BACKEND
    assert counts == [1, 2, 3]
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.get(f":1:{key}") == b"3"  # Django's key format: KEY_PREFIX:VERSION:key
        assert 0 < client.ttl(f":1:{key}") <= 600
        assert 500 < pickle.loads(client.get(f":1:{key}:closes")) - time.time() <= 600
    finally:
        client.delete(f":1:{key}", f":1:{key}:closes")
        client.close()


def test_an_unreachable_cache_lets_requests_through_and_says_so(db, settings, limits, caplog):
    settings.CACHES = {
        **settings.CACHES,
        "down": {
            "BACKEND": REDIS_BACKEND,
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        },
    }
    settings.RATELIMIT_CACHE = "down"
    limits(token_failures_per_address=(1, 60))
    with caplog.at_level(logging.ERROR, logger="plumbing.ratelimit"):
        for _ in range(3):
            assert guess().status_code == 401
    assert "Rate limiting skipped: the cache is unavailable (ConnectionError)" in caplog.messages


def test_on_redis_strangers_never_refuse_the_apps_right_secret(
    db, settings, limits, redis_url, redis_prefix, approved_confidential, end_user
):
    # issue 28, medium 4: the per-client window shared through Redis by two processes.
    from tests.factories import make_tokens

    first, second = two_processes(settings, REDIS_BACKEND, redis_url, redis_prefix)
    client, secret = approved_confidential
    limits(token_failures_per_client=(20, 60))

    def refresh(secret, refresh_token="x" * 43, address="198.51.100.60"):
        data = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        data.update(client_id=client.client_id, client_secret=secret)
        return Client().post(
            TOKEN, data=urlencode(data), content_type="application/x-www-form-urlencoded", REMOTE_ADDR=address
        )

    answers = []
    for index in range(40):
        settings.RATELIMIT_CACHE = (first, second)[index % 2]
        answers.append(refresh("cs_wrong", address=f"203.0.113.{index + 1}").status_code)
    assert answers == [401] * 20 + [429] * 20
    for alias in (first, second):
        settings.RATELIMIT_CACHE = alias
        _access, refresh_token = make_tokens(end_user, client)
        assert refresh(secret, refresh_token).status_code == 200
        assert refresh("cs_wrong").status_code == 429
