"""Where allauth's security state is kept (issue "The front door holds", Low 7; docs/accounts.md):
Django's default cache, in a table of PostgreSQL without Redis (plumbing.sharedcache), so that a code
used once is refused by every server process; per process only on SQLite, the single-process
development default; a missing table is no 500, and /readyz and `check --deploy` name it."""

import logging
import threading

import pyotp
import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP
from django.core.cache import caches
from django.db import connection, connections
from django.test import Client

from config.checks import security_state_shared
from operations import readiness
from plumbing.sharedcache import TABLE, shared_cache_forget
from tests.factories import PASSWORD, make_user
from tests.plumbing.ratelimit.settings_probe import production_settings

SHARED = "plumbing.sharedcache.SharedStateCache"
LOCMEM = "django.core.cache.backends.locmem.LocMemCache"
MISSING = "no_such_cache_table"


@pytest.fixture
def shared(settings):
    """The default cache as production lays it out on PostgreSQL without Redis."""
    settings.CACHES = {**settings.CACHES, "default": {"BACKEND": SHARED}}
    shared_cache_forget()
    caches["default"].clear()
    yield caches["default"]
    caches["default"].clear()
    shared_cache_forget()


@pytest.fixture
def missing_table(settings):
    settings.CACHES = {**settings.CACHES, "default": {"BACKEND": SHARED, "LOCATION": MISSING}}
    shared_cache_forget()
    readiness.readiness_forget()
    yield
    shared_cache_forget()


def test_production_keeps_the_default_cache_in_postgresql_without_redis():
    code = "print(json.dumps([settings.CACHES['default']['BACKEND'], settings.RATELIMIT_CACHE]))"
    postgres = production_settings(code, DATABASE_URL="postgres://postgres@127.0.0.1:5432/test")
    assert postgres == [SHARED, "ratelimit"]
    redis = production_settings(code, DATABASE_URL="postgres://postgres@127.0.0.1:5432/test", REDIS_URL="redis://x/0")
    assert redis == ["django.core.cache.backends.redis.RedisCache", "default"]
    sqlite = production_settings(code, DATABASE_URL="sqlite:////tmp/settings-probe.sqlite3")
    assert sqlite == [LOCMEM, "default"]


def test_migrate_makes_the_table(db):
    assert TABLE in connection.introspection.table_names()


def test_the_cache_api_allauth_uses(db, shared):
    cache = shared
    assert cache.add("allauth.mfa.totp.used?user=1&code=123456", "y", timeout=30) is True
    assert cache.add("allauth.mfa.totp.used?user=1&code=123456", "y", timeout=30) is False
    cache.set("allauth:rl:history", [3.5, 2.25], timeout=60)
    assert cache.get("allauth:rl:history") == [3.5, 2.25]
    assert cache.get("missing", "default") == "default" and cache.has_key("allauth:rl:history")
    assert cache.add("lock", True, timeout=10) and cache.delete("lock") and cache.add("lock", True, timeout=10)
    cache.set("n", 1)
    assert cache.incr("n", 2) == 3
    assert cache.touch("n", 60) is True
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {TABLE}")
        assert cursor.fetchone()[0] == 4  # in the table, not in a stand-in


def test_an_expired_entry_is_added_again(db, shared):
    cache = shared
    assert cache.add("k", "first", timeout=30)
    with connection.cursor() as cursor:  # as if its 30 s had passed
        cursor.execute(f"UPDATE {TABLE} SET expires = %s", [connection.ops.adapt_datetimefield_value(_past())])
    assert cache.get("k") is None
    assert cache.add("k", "second", timeout=30) is True and cache.get("k") == "second"


def _past():
    from datetime import timedelta

    from django.utils import timezone

    return (timezone.now() - timedelta(minutes=5)).replace(microsecond=0)


def test_culling_never_evicts_a_live_entry(db, settings):
    # Django's DatabaseCache deletes live rows past MAX_ENTRIES: a flood of keys would evict a used
    # code's mark. Here only expired rows go.
    settings.CACHES = {**settings.CACHES, "default": {"BACKEND": SHARED, "OPTIONS": {"MAX_ENTRIES": 3}}}
    shared_cache_forget()
    cache = caches["default"]
    cache.add("used-code", "y", timeout=30)
    for index in range(12):
        cache.set(f"flood-{index}", index, timeout=60)
    assert cache.get("used-code") == "y"
    assert all(cache.get(f"flood-{index}") == index for index in range(12))
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET expires = %s WHERE cache_key LIKE %s", [_past(), "%flood-1%"])
    cache.set("one-more", 1, timeout=60)  # past MAX_ENTRIES: the expired rows are swept
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE cache_key LIKE %s", ["%flood-1%"])
        assert cursor.fetchone()[0] == 0
    assert cache.get("used-code") == "y"
    shared_cache_forget()


# --- across processes: other connections, other cache objects ----------------------------------------


def _in_another_connection(call):
    """`call` in a thread of its own: its own database connection and its own cache object (Django
    makes both per thread), as another server process has."""
    result, errors = [], []

    def run():
        try:
            result.append(call())
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert errors == []
    return result[0]


@pytest.mark.postgres_only
def test_a_used_code_is_refused_through_another_connection(transactional_db, shared, settings):
    settings.MFA_TOTP_TOLERANCE = 1
    user = make_user("alice")
    secret = pyotp.random_base32()
    TOTP.activate(user, secret)
    code = pyotp.TOTP(secret).now()

    def validate():
        assert caches["default"] is not shared  # another cache object, as in another process
        app = Authenticator.objects.get(user=user, type=Authenticator.Type.TOTP).wrap()
        return app.validate_code(code)

    assert _in_another_connection(validate) is True
    assert _in_another_connection(validate) is False
    assert Authenticator.objects.get(user=user).wrap().validate_code(code) is False


@pytest.mark.postgres_only
def test_concurrent_adds_over_an_expired_entry_have_exactly_one_winner(transactional_db, shared):
    # Django's own add reads, then overwrites an expired row: two processes both "won" a used code.
    shared.add("race", "old", timeout=30)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET expires = %s", [_past()])
    barrier = threading.Barrier(8)
    won, errors = [], []

    def add():
        try:
            barrier.wait(timeout=10)
            won.append(caches["default"].add("race", "new", timeout=30))
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=add) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and sorted(won) == [False] * 7 + [True]


# --- a missing table: no 500, and said where an operator looks -----------------------------------------


def test_a_missing_table_is_no_500_at_sign_in(db, missing_table, settings, caplog):
    settings.MFA_TOTP_TOLERANCE = 1
    user = make_user("alice")
    secret = pyotp.random_base32()
    TOTP.activate(user, secret)
    code = pyotp.TOTP(secret).now()
    browser = Client()
    assert browser.post("/accounts/login/", {"login": "alice", "password": PASSWORD}).status_code == 302
    with caplog.at_level(logging.ERROR, logger="plumbing.sharedcache"):
        signed_in = browser.post("/accounts/2fa/authenticate/", {"code": code})
    assert signed_in.status_code == 302 and "_auth_user_id" in browser.session
    assert any(f"Cache table {MISSING} is missing" in record.getMessage() for record in caplog.records)
    # The process keeps the used code itself meanwhile: the same code is refused again here.
    again = Client()
    assert again.post("/accounts/login/", {"login": "alice", "password": PASSWORD}).status_code == 302
    assert again.post("/accounts/2fa/authenticate/", {"code": code}).status_code == 200
    assert "_auth_user_id" not in again.session


def test_a_missing_table_is_not_ready_and_a_deploy_error(db, missing_table):
    response = Client().get("/readyz", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 503
    assert response.json()["checks"]["cache"] == f"default: table {MISSING} is missing (manage.py migrate)"
    (error,) = security_state_shared(databases=["default"])
    assert error.id == "config.E007" and MISSING in error.msg and "migrate" in error.hint
    assert security_state_shared() == []  # a database question: asked only with --database default


def test_once_migrate_has_made_the_table_it_is_used_without_a_restart(db, missing_table, monkeypatch):
    from django.core.management.commands.createcachetable import Command

    from plumbing import sharedcache

    cache = caches["default"]
    cache.set("k", "in the stand-in")
    assert cache.table_problem() is not None
    command = Command()
    command.verbosity = 0
    command.create_table("default", MISSING, dry_run=False)  # what the migration does
    monkeypatch.setattr(sharedcache, "RECHECK_SECONDS", 0)
    assert cache.get("k") is None  # from the table now
    cache.set("k", "in the table")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {MISSING}")
        assert cursor.fetchone()[0] == 1
    assert cache.table_problem() is None


def test_a_present_table_is_ready_and_no_deploy_error(db, shared):
    readiness.readiness_forget()
    assert shared.table_problem() is None
    assert security_state_shared(databases=["default"]) == []


# --- check --deploy: security state in a per-process cache ------------------------------------------


@pytest.fixture
def _no_worker_count(monkeypatch):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)


def test_a_per_process_default_cache_is_a_deploy_warning(settings, _no_worker_count):
    settings.CACHES = {"default": {"BACKEND": LOCMEM}}
    (warning,) = security_state_shared()
    assert warning.id == "config.W005"
    assert "used authenticator-app codes" in warning.msg and "REDIS_URL" in warning.hint


def test_check_deploy_reports_it(settings, _no_worker_count):
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    settings.CACHES = {"default": {"BACKEND": LOCMEM}}
    with pytest.raises(SystemCheckError, match="config.W005"):
        call_command("check", "--deploy", "--fail-level", "WARNING", "--tag", "security")


@pytest.mark.parametrize(
    "backend, workers",
    [(SHARED, None), ("django.core.cache.backends.redis.RedisCache", None), (LOCMEM, "1")],
)
def test_no_warning_when_the_state_is_shared_or_one_worker_serves(settings, monkeypatch, backend, workers):
    settings.CACHES = {
        "default": {"BACKEND": backend, "LOCATION": "redis://127.0.0.1:6379/0" if "redis" in backend else ""}
    }
    if workers:
        monkeypatch.setenv("WEB_CONCURRENCY", workers)
    else:
        monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    assert security_state_shared() == []
