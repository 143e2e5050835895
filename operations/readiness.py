"""What /readyz asks: can this process serve a request right now?

Each check answers None (fine) or a short problem that names what failed and never a secret: an
exception's class, not its message (a driver's message can carry a host, a user or a DSN).
"""

import time

from django.conf import settings
from django.core.cache import caches
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from accounts.selectors import identity_provider_secret_problems
from operations.drain import draining
from plumbing.sharedcache import PER_PROCESS_CACHES
from signing.keys import signing_keys_problems

# A passing key check is believed this long: decrypting every key on each probe (every second or
# two, per balancer) would cost CPU for an answer that changes only when someone changes the keys
# or the environment (and the environment changes only with a restart).
KEYS_CHECK_TTL = 60

_migrations_applied = False
_keys_checked_at: float | None = None
_providers_checked_at: float | None = None


def _database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return f"unavailable ({type(exc).__name__})"
    return None


def _migrations() -> str | None:
    """Unapplied migrations: this code expects tables or columns the database does not have yet.
    Once applied, always applied for this process (its code does not change)."""
    global _migrations_applied
    if _migrations_applied:
        return None

    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        return f"unknown ({type(exc).__name__})"
    if plan:
        return f"{len(plan)} not applied (manage.py migrate)"
    _migrations_applied = True
    return None


def _caches() -> str | None:
    for alias, config in settings.CACHES.items():
        if config["BACKEND"] in PER_PROCESS_CACHES or config["BACKEND"].startswith("plumbing.countercache"):
            continue  # in the process, or in the database checked above (the counters make their table)
        try:
            cache = caches[alias]
            if hasattr(cache, "table_problem"):  # plumbing.sharedcache: in the database, in a table `migrate` makes
                if problem := cache.table_problem():
                    return f"{alias}: {problem}"
                continue
            cache.get("operations:readyz")
        except Exception as exc:  # any backend's error (redis.ConnectionError, TimeoutError...)
            return f"{alias}: unavailable ({type(exc).__name__})"
    return None


def _signing_keys() -> str | None:
    global _keys_checked_at
    if _keys_checked_at is not None and time.monotonic() - _keys_checked_at < KEYS_CHECK_TTL:
        return None
    try:
        problems = signing_keys_problems()  # the one check `check --deploy` runs too (config.E005)
    except DatabaseError as exc:
        return f"unknown ({type(exc).__name__})"
    if problems:
        return "; ".join(problems)
    _keys_checked_at = time.monotonic()
    return None


def _identity_providers() -> str | None:
    """Every identity provider's client secret opens (each is offered at sign-in); a passing answer
    is believed as long as the signing keys' (the same key-encryption key opens both)."""
    global _providers_checked_at
    if _providers_checked_at is not None and time.monotonic() - _providers_checked_at < KEYS_CHECK_TTL:
        return None
    try:
        problems = identity_provider_secret_problems()  # the one check `check --deploy` runs too (accounts.E001)
    except DatabaseError as exc:
        return f"unknown ({type(exc).__name__})"
    if problems:
        return "; ".join(problems)
    _providers_checked_at = time.monotonic()
    return None


# Reported, without taking the process out of the pool: a provider whose secret does not open is
# not offered at sign-in, and everything else (passwords, passkeys, the token endpoint) still serves.
REPORTED_ONLY = frozenset({"identity_providers"})


def readiness() -> tuple[bool, dict[str, str]]:
    """(ready, {check: "ok" or its problem}). The database first: without it the rest cannot be asked."""
    checks: dict[str, str] = {}
    if draining():
        checks["shutdown"] = "draining (SIGTERM received; the server stops after the drain delay)"
    database = _database()
    checks["database"] = database or "ok"
    if database is None:
        checks["migrations"] = _migrations() or "ok"
        checks["signing_keys"] = _signing_keys() or "ok"
        checks["identity_providers"] = _identity_providers() or "ok"
    checks["cache"] = _caches() or "ok"
    return all(value == "ok" for name, value in checks.items() if name not in REPORTED_ONLY), checks


def readiness_forget() -> None:
    """Tests: ask everything again."""
    global _migrations_applied, _keys_checked_at, _providers_checked_at
    _migrations_applied = False
    _keys_checked_at = None
    _providers_checked_at = None
