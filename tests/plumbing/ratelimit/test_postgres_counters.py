"""Without Redis, on PostgreSQL, the rate limiter's counters live in the database
(plumbing.countercache.PostgresCounterCache): shared by every worker, atomic under concurrency,
expiring with their window; per process only on SQLite."""

import threading
import time
from urllib.parse import urlencode

import pytest
from django.core.cache import caches
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from plumbing.ratelimit import Window
from tests.factories import make_tokens
from tests.oauthflows.helpers import TOKEN
from tests.plumbing.ratelimit.settings_probe import production_settings
from tests.plumbing.ratelimit.test_shared_counts import guess

BACKEND = "plumbing.countercache.PostgresCounterCache"
postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="the counters are PostgreSQL's")


def test_production_on_postgresql_without_redis_counts_in_the_database():
    seen = production_settings(
        "print(json.dumps([settings.RATELIMIT_CACHE, settings.CACHES[settings.RATELIMIT_CACHE]['BACKEND']]))",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/test",
    )
    assert seen == ["ratelimit", BACKEND]


def test_redis_wins_and_sqlite_stays_per_process():
    code = "print(json.dumps(settings.CACHES[settings.RATELIMIT_CACHE]['BACKEND']))"
    redis = production_settings(
        code, DATABASE_URL="postgres://postgres@127.0.0.1:5432/test", REDIS_URL="redis://x:6379/0"
    )
    assert redis == "django.core.cache.backends.redis.RedisCache"
    sqlite = production_settings(code, DATABASE_URL="sqlite:////tmp/settings-probe.sqlite3")
    assert sqlite == "django.core.cache.backends.locmem.LocMemCache"


@pytest.fixture
def counters(settings, transactional_db):
    settings.CACHES = {
        **settings.CACHES,
        "process_a": {"BACKEND": BACKEND, "LOCATION": "ratelimit_counters_test"},
        "process_b": {"BACKEND": BACKEND, "LOCATION": "ratelimit_counters_test"},
    }
    caches["process_a"].clear()
    yield caches["process_a"], caches["process_b"]
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS ratelimit_counters_test")


@postgres_only
def test_the_cache_operations_the_limiter_uses(counters):
    cache, other = counters
    assert cache.add("k", 1, timeout=60) is True
    assert other.add("k", 1, timeout=60) is False  # the window is open, for every process
    assert other.incr("k") == 2 and cache.incr("k", 3) == 5
    assert cache.get("k") == 5 and other.get("missing", 0) == 0
    cache.set("closes", 1234.5, timeout=60)
    assert other.get("closes") == 1234.5
    with pytest.raises(ValueError):
        cache.incr("missing")
    assert cache.delete("k") is True and cache.get("k") is None


@postgres_only
def test_an_expired_window_is_reopened_and_not_counted(counters):
    cache, other = counters
    assert cache.add("w", 1, timeout=1)
    cache.incr("w")
    time.sleep(1.1)
    assert other.get("w") is None
    with pytest.raises(ValueError):
        other.incr("w")  # Window.count then opens the next one
    assert other.add("w", 1, timeout=60) is True
    assert cache.get("w") == 1


@postgres_only
def test_concurrent_hits_from_many_connections_lose_none(counters):
    cache, _other = counters
    window = Window.of("token_failures_per_address", "198.51.100.9", 60)
    errors = []

    def hit():
        try:
            for _ in range(25):
                window.count(cache, time.time())
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=hit) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert window.used(cache) == 200


@postgres_only
def test_two_processes_share_a_limit(counters, settings, limits):
    limits(token_failures_per_address=(3, 60))
    for alias in ("process_a", "process_b", "process_a"):
        settings.RATELIMIT_CACHE = alias
        assert guess().status_code in (400, 401)
    # Process a's third failure filled the shared window: a refuses at once, from its own ledger.
    refused = guess()
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    # Process b last saw 2 of 3: it lets one more failure through, whose statement returns 4 of 3.
    settings.RATELIMIT_CACHE = "process_b"
    assert guess().status_code == 401
    refused = guess()
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


@postgres_only
def test_a_request_limit_shared_by_two_processes_refuses_at_its_limit_not_before(counters, settings, limits):
    # Batches in each process's ledger: never a refusal below the limit, at most one batch over it
    # per process (near the limit the batches are of one request).
    limits(token_requests_per_address=(40, 60), token_failures_per_address=(10**6, 60))
    served = []
    for index in range(60):
        settings.RATELIMIT_CACHE = ("process_a", "process_b")[index % 2]
        served.append(guess().status_code != 429)
    assert all(served[:40])
    assert 40 <= sum(served) <= 42
    assert not any(served[44:])


@postgres_only
def test_a_window_is_counted_and_reopened_in_one_statement_each(counters):
    cache, other = counters
    window = Window.of("registrations_per_address", "198.51.100.7", 1)
    started = time.time()
    assert window.count(cache, started) == 1
    assert window.count(other, started) == 2
    assert 0 < other.window_closes(window.key) - started <= 1.01
    assert window.retry_after(cache, started) in (1, 2)  # whole seconds, rounded up
    time.sleep(1.1)
    assert other.window_closes(window.key) is None
    assert window.count(other, time.time()) == 1  # the closed window's count is not carried over
    assert window.used(cache) == 1


@postgres_only
def test_a_routes_limits_are_checked_in_one_statement(counters):
    cache, other = counters
    cache.set("failures", 4, timeout=60)
    first = cache.check_windows(read=["failures", "no-failures"], count=[("requests", 60), ("per-client", 60)])
    assert {key: value for key, (value, _closes) in first.items()} == {"failures": 4, "requests": 1, "per-client": 1}
    second = other.check_windows(read=[], count=[("requests", 60)])
    assert second["requests"][0] == 2 and second["requests"][1] > time.time() + 50
    assert cache.check_windows(read=[], count=[]) == {}


def _limiter_statements(call) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        call()
    return [query["sql"] for query in captured.captured_queries if "ratelimit_counters_test" in query["sql"]]


@postgres_only
def test_a_failed_token_request_costs_one_statement_for_its_limits(counters, settings):
    settings.RATELIMIT_CACHE = "process_a"
    # The first request of a window writes its request limit before the view, and its failure
    # limits after it (the table is made on the connection's first use, too).
    first = _limiter_statements(guess)
    assert [sql.startswith("WITH c0 AS (INSERT") for sql in first if "CREATE" not in sql] == [True, True]
    # Then the request limit is added in batches: a failure costs its own statement only.
    for _ in range(3):
        later = _limiter_statements(guess)
        assert len(later) == 1 and later[0].startswith("WITH c0 AS (INSERT")


@postgres_only
def test_a_successful_request_writes_its_request_limits_once_a_batch(counters, settings, limits):
    from tests.oauthflows.test_registration import register

    settings.RATELIMIT_CACHE = "process_a"
    limits(registrations_per_address=(10**6, 3600), registrations_total=(10**6, 3600))
    metadata = {"client_name": "Batch", "redirect_uris": ["http://127.0.0.1:4000/cb"]}
    assert len(_limiter_statements(lambda: register(Client(), metadata))) == 1  # opens both windows
    written = [len(_limiter_statements(lambda: register(Client(), metadata))) for _ in range(30)]
    # One statement for both limits once their batch (25 requests here) is full, none otherwise.
    assert written == [0] * 24 + [1] + [0] * 5
    assert caches["process_b"].get(Window.of("registrations_total", "all", 3600).key) == 26


def _refresh(client_id, secret, refresh_token, address):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    data["client_secret"] = secret
    return Client().post(
        TOKEN, data=urlencode(data), content_type="application/x-www-form-urlencoded", REMOTE_ADDR=address
    )


@postgres_only
def test_strangers_sharing_the_counters_never_refuse_the_apps_right_secret(
    counters, settings, limits, approved_confidential, end_user
):
    # issue 28, medium 4, with the window shared by two processes through the database ledger.
    client, secret = approved_confidential
    limits(token_failures_per_client=(20, 60))
    # Fifteen failures through one process, then the rest through another (setting the setting
    # empties both processes' ledgers, so one switch: the shared count is all b starts from).
    answers = []
    settings.RATELIMIT_CACHE = "process_a"
    for index in range(40):
        if index == 15:
            settings.RATELIMIT_CACHE = "process_b"
        answers.append(_refresh(client.client_id, "cs_wrong", "x" * 43, f"203.0.113.{index + 1}").status_code)
    assert answers == [401] * 20 + [429] * 20
    _access, refresh_token = make_tokens(end_user, client)
    assert _refresh(client.client_id, secret, refresh_token, "198.51.100.50").status_code == 200
    settings.RATELIMIT_CACHE = "process_a"
    _access, refresh_token = make_tokens(end_user, client)
    assert _refresh(client.client_id, secret, refresh_token, "198.51.100.50").status_code == 200
    # a had not seen the window full: one more failure through, whose statement tells it.
    assert _refresh(client.client_id, "cs_wrong", "x" * 43, "198.51.100.51").status_code == 401
    refused = _refresh(client.client_id, "cs_wrong", "x" * 43, "198.51.100.51")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


# --- attempt limits (a second factor's code): the database's count decides, in every process ---------


@postgres_only
def test_a_code_limit_refuses_the_right_code_in_a_process_that_saw_no_failure(counters, settings, limits):
    """The attack of issue "The front door holds" (High 1) across processes: a failure limit would
    let the right code through a process whose ledger had not seen the window full."""
    from tests.accounts.test_second_factor_limits import at_second_step, right_code, with_totp, wrong_code

    limits(second_factor_failures_per_account=(3, 900))
    _user, secret = with_totp("alice")
    browser = at_second_step("alice")
    settings.RATELIMIT_CACHE = "process_a"
    for _ in range(3):
        assert browser.post("/accounts/2fa/authenticate/", {"code": wrong_code(secret)}).status_code == 200
    settings.RATELIMIT_CACHE = "process_b"  # another process: its ledger is empty
    refused = browser.post("/accounts/2fa/authenticate/", {"code": right_code(secret)})
    assert refused.status_code == 429 and 890 <= int(refused["Retry-After"]) <= 900
    assert "_auth_user_id" not in browser.session


@postgres_only
def test_an_attempt_costs_one_statement_and_a_success_one_more(counters, settings):
    from tests.accounts.test_second_factor_limits import HERE, at_second_step, right_code, with_totp, wrong_code

    settings.RATELIMIT_CACHE = "process_a"
    _user, secret = with_totp("alice")
    browser = at_second_step("alice")
    wrong = _limiter_statements(lambda: browser.post("/accounts/2fa/authenticate/", {"code": wrong_code(secret)}))
    assert [sql.split(" (")[0] for sql in wrong if "CREATE" not in sql] == ["WITH c0 AS"]  # both limits at once
    right = _limiter_statements(lambda: browser.post("/accounts/2fa/authenticate/", {"code": right_code(secret)}))
    assert [sql.split(" ")[0] for sql in right] == ["WITH", "UPDATE"]  # counted, then both given back
    address = Window.of("second_factor_failures_per_address", HERE, 900)
    assert caches["process_b"].get(address.key) == 1  # the wrong code stays counted, the right one not


@postgres_only
def test_a_count_is_given_back_never_below_zero_nor_from_a_closed_window(counters):
    cache, other = counters
    window = Window.of("second_factor_failures_per_account", "1", 1)
    assert window.count(cache, time.time()) == 1 and window.count(other, time.time()) == 2
    Window.give_back(other, [window])
    assert window.used(cache) == 1
    Window.give_back(cache, [window, window])  # one statement: the key taken back once
    Window.give_back(cache, [window])
    assert window.used(other) == 0
    time.sleep(1.1)
    Window.give_back(cache, [window])
    assert window.count(other, time.time()) == 1  # the next window starts from nothing
