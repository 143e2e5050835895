"""Server-wide slots (plumbing.slots): at most N holders at once across processes, counted where the
rate limits count (Redis, PostgreSQL's counter table; per process on locmem), each slot freeing
itself when its lifetime ends (a killed holder) and given back at once by a holder that is done."""

import threading
import time

import pytest
from django.core.cache import caches
from django.db import connection, connections

from plumbing.slots import slot_taken, slots_in_use

COUNTERS = "plumbing.countercache.PostgresCounterCache"
REDIS = "django.core.cache.backends.redis.RedisCache"
LOCMEM = "django.core.cache.backends.locmem.LocMemCache"


def use_cache(settings, backend: str, location: str, prefix: str = "", **options) -> tuple[str, str]:
    """Two aliases on one store, as two server processes have; the slots count in the first."""
    settings.CACHES = {
        **settings.CACHES,
        "process_a": {"BACKEND": backend, "LOCATION": location, "KEY_PREFIX": prefix, "OPTIONS": options},
        # locmem's memory is its process's own: the other process has another.
        "process_b": {
            "BACKEND": backend,
            "LOCATION": location + "-b" if backend == LOCMEM else location,
            "KEY_PREFIX": prefix,
            "OPTIONS": options,
        },
    }
    settings.RATELIMIT_CACHE = "process_a"
    return "process_a", "process_b"


@pytest.fixture(params=["locmem", "postgresql", "redis"])
def store(request, settings):
    if request.param == "locmem":
        use_cache(settings, LOCMEM, "slots-test")
        caches["process_a"].clear()
        yield request.param
        caches["process_a"].clear()
    elif request.param == "postgresql":
        request.getfixturevalue("transactional_db")
        if connection.vendor != "postgresql":
            pytest.skip("the counter table is PostgreSQL's")
        use_cache(settings, COUNTERS, "slots_test_counters")
        yield request.param
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS slots_test_counters")
    else:
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        use_cache(settings, REDIS, url, prefix)
        yield request.param


def test_a_slot_is_taken_and_given_back(store):
    with slot_taken(pool="p", size=2, lifetime=30) as taken:
        assert taken is True
        assert slots_in_use(pool="p", size=2) == 1
    assert slots_in_use(pool="p", size=2) == 0


def test_past_the_size_no_slot_is_given_until_one_is_back(store):
    with slot_taken(pool="p", size=2, lifetime=30) as first, slot_taken(pool="p", size=2, lifetime=30) as second:
        assert (first, second) == (True, True)
        started = time.monotonic()
        with slot_taken(pool="p", size=2, lifetime=30) as third:
            assert third is False
        assert time.monotonic() - started < 1  # refused at once, no waiting
        assert slots_in_use(pool="p", size=2) == 2  # the refusal gave back nothing of others'
    with slot_taken(pool="p", size=2, lifetime=30) as again:
        assert again is True


def test_pools_are_counted_apart(store):
    with slot_taken(pool="p", size=1, lifetime=30) as first, slot_taken(pool="q", size=1, lifetime=30) as other:
        assert (first, other) == (True, True)


def test_a_slot_whose_holder_never_gave_it_back_frees_itself(store):
    # A holder killed mid-fetch: the context manager is entered and never left.
    held = slot_taken(pool="p", size=1, lifetime=1)
    assert held.__enter__() is True
    with slot_taken(pool="p", size=1, lifetime=1) as meanwhile:
        assert meanwhile is False
    time.sleep(1.3)
    with slot_taken(pool="p", size=1, lifetime=1) as later:
        assert later is True


def test_a_holder_past_its_lifetime_does_not_free_the_next_holders_slot(store):
    held = slot_taken(pool="p", size=1, lifetime=1)
    assert held.__enter__() is True
    time.sleep(1.3)
    with slot_taken(pool="p", size=1, lifetime=30) as next_holder:
        assert next_holder is True
        held.__exit__(None, None, None)  # the slow first holder finishes now
        assert slots_in_use(pool="p", size=1) == 1


def test_processes_share_the_slots_except_on_locmem(store, settings):
    with slot_taken(pool="p", size=1, lifetime=30) as here:
        assert here is True
        settings.RATELIMIT_CACHE = "process_b"  # another server process's cache client
        with slot_taken(pool="p", size=1, lifetime=30) as there:
            assert there is (store == "locmem")  # per process on locmem (README)
        settings.RATELIMIT_CACHE = "process_a"


def test_concurrent_takers_get_at_most_size_slots(store):
    size, takers = 3, 12
    results, go = [], threading.Barrier(takers)
    hold = threading.Event()

    def take():
        go.wait()
        try:
            with slot_taken(pool="p", size=size, lifetime=30) as taken:
                results.append(taken)
                hold.wait(5)
        finally:
            connections.close_all()  # this thread's database connection (the counter table)

    # The counter table is made on first use: here by twelve first uses at once, which race to make
    # it (a second try each, in plumbing.slots; counted nonetheless).
    threads = [threading.Thread(target=take) for _ in range(takers)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while len(results) < takers and time.monotonic() < deadline:
        time.sleep(0.02)
    hold.set()
    for thread in threads:
        thread.join()
    assert results.count(True) == size and results.count(False) == takers - size


def test_an_unreachable_cache_grants_the_slot_and_says_so(settings, caplog):
    use_cache(settings, REDIS, "redis://127.0.0.1:1/0", socket_connect_timeout=0.2)  # nothing listens on port 1
    with slot_taken(pool="p", size=1, lifetime=30) as taken:
        assert taken is True
    assert "the cache is unavailable" in caplog.text
