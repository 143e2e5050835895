"""Deployment checks (`manage.py check --deploy`) for what Django's own checks cannot know."""

import os

from argon2.low_level import Type
from django.conf import settings
from django.contrib.auth.hashers import Argon2PasswordHasher, get_hashers
from django.core.cache import caches
from django.core.checks import Error, Tags, Warning, register
from django.db import DatabaseError

from accounts.hashers import MINIMUM_MEMORY_KIB, MINIMUM_TIME_COST
from oauthclients.algorithms import SIGNING_ALGORITHMS
from oauthclients.models import ClientKind, OAuthClient, TokenFormat
from oauthclients.policy import client_serves_q
from plumbing.sharedcache import PER_PROCESS_CACHES
from signing.keys import signing_key_current, signing_keys_problems
from signing.models import SigningKey
from signing.statuslist import status_triggers_missing


@register(Tags.security, deploy=True)
def ratelimit_cache_shared(app_configs=None, **kwargs) -> list[Warning]:
    """Rate limits counted per process multiply with the number of workers (docs/configuration.md, "Rate limits")."""
    if not settings.RATELIMIT_ENABLED:
        return []
    backend = settings.CACHES[settings.RATELIMIT_CACHE]["BACKEND"]
    # gunicorn's default worker count comes from WEB_CONCURRENCY; 1 says only one process serves.
    if backend not in PER_PROCESS_CACHES or os.environ.get("WEB_CONCURRENCY", "").strip() == "1":
        return []
    return [
        Warning(
            "Rate limits are counted in a per-process cache, so each server process allows the full "
            "limit (with 4 workers, 4 times as many attempts).",
            hint="Set REDIS_URL so that every process shares the counts, or run a single worker (WEB_CONCURRENCY=1).",
            id="config.W001",
        )
    ]


@register(Tags.security, deploy=True)
def security_state_shared(app_configs=None, databases=None, **kwargs) -> list:
    """django-allauth keeps security state in the default cache (docs/accounts.md, "Where security
    state is kept"): per process, a code used once passes again at another worker."""
    backend = settings.CACHES["default"]["BACKEND"]
    if backend in PER_PROCESS_CACHES:
        if os.environ.get("WEB_CONCURRENCY", "").strip() == "1":
            return []
        return [
            Warning(
                "The default cache is per process, and it holds security state: used authenticator-app "
                "codes and allauth's limits (password resets, passkey sign-in). A code used once is "
                "accepted again by another server process.",
                hint="Use PostgreSQL (the default cache then lives in a table of it) or set REDIS_URL; "
                "or run a single worker (WEB_CONCURRENCY=1).",
                id="config.W005",
            )
        ]
    if not databases or "default" not in databases:
        return []
    cache = caches["default"]
    if not hasattr(cache, "table_problem"):
        return []
    try:
        problem = cache.table_problem()
    except DatabaseError:
        return []  # the database's own checks report it
    if problem is None:
        return []
    return [
        Error(
            f"The default cache's {problem}; until it exists, each server process keeps the security "
            "state on its own (used authenticator-app codes, allauth's limits).",
            hint="Run `manage.py migrate`: it makes the table.",
            id="config.E007",
        )
    ]


@register(Tags.security, deploy=True)
def password_hasher_strong(app_configs=None, **kwargs) -> list[Warning]:
    """The first of PASSWORD_HASHERS hashes every new password and every one it upgrades at sign-in:
    Argon2id at or above OWASP's first recommendation (docs/configuration.md, "Password hashing")."""
    hasher = get_hashers()[0]
    if isinstance(hasher, Argon2PasswordHasher):
        params = hasher.params()
        if (
            params.type == Type.ID
            and params.memory_cost >= MINIMUM_MEMORY_KIB
            and params.time_cost >= MINIMUM_TIME_COST
        ):
            return []
        found = f"Argon2 ({params.type.name.lower()}, m = {params.memory_cost} KiB, t = {params.time_cost})"
    else:
        found = f"{type(hasher).__name__} ({hasher.algorithm})"
    return [
        Warning(
            f"The first password hasher is {found}, not Argon2id at m >= {MINIMUM_MEMORY_KIB} KiB "
            f"and t >= {MINIMUM_TIME_COST}: new passwords, and the old ones upgraded at sign-in, are "
            "stored with it.",
            hint="Put accounts.hashers.Argon2idPasswordHasher first in PASSWORD_HASHERS (docs/configuration.md, "
            "'Password hashing').",
            id="config.W006",
        )
    ]


@register(Tags.security, deploy=True)
def client_metadata_loopback_off(app_configs=None, **kwargs) -> list[Warning]:
    """OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK lets a client_id make this server fetch from itself."""
    if not getattr(settings, "OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK", False):
        return []
    return [
        Warning(
            "OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK is on: any client_id URL on 127.0.0.1, localhost or [::1] "
            "makes this server fetch it over plain http (a request to its own host, chosen by whoever "
            "writes an authorization link).",
            hint="It is for development and tests only: unset it in production.",
            id="config.W002",
        )
    ]


@register(Tags.security, deploy=True)
def staff_second_factor_required(app_configs=None, **kwargs) -> list[Warning]:
    """SECURITY.md, "Accounts and the login": turning the staff rule off is an operator's decision, reported."""
    if settings.OAUTH_STAFF_MFA_REQUIRED:
        return []
    return [
        Warning(
            "OAUTH_STAFF_MFA_REQUIRED is off: staff accounts reach the admin without a second factor.",
            hint="Set OAUTH_STAFF_MFA_REQUIRED=1 (docs/accounts.md, 'The staff rule').",
            id="accounts.W001",
        )
    ]


@register(Tags.security, deploy=True)
def signing_keys_ready(app_configs=None, databases=None, **kwargs) -> list:
    """Signing needs the encryption key (environment) and at least one key (`manage.py signingkey`);
    the second is a database question, asked as Django asks them: `check --deploy --database default`."""
    problems = []
    if len(getattr(settings, "OAUTH_SIGNING_KEY_ENCRYPTION_KEY", "") or "") < 32:
        problems.append(
            Error(
                "OAUTH_SIGNING_KEY_ENCRYPTION_KEY is not set (or shorter than 32 characters): signing keys "
                "cannot be made or used.",
                hint="Set it to a random secret of 32 or more characters, kept like DJANGO_SECRET_KEY.",
                id="config.E003",
            )
        )
    if not databases or "default" not in databases:
        return problems
    try:
        algorithms = set(SigningKey.objects.values_list("algorithm", flat=True).distinct())
    except DatabaseError:
        return problems  # the database's own checks report it
    if not algorithms:
        problems.append(
            Error(
                "No signing key exists: the JWKS is empty.",
                hint="Run "
                + " and ".join(f"`manage.py signingkey create --alg {alg}`" for alg in SIGNING_ALGORITHMS)
                + ".",
                id="config.E004",
            )
        )
    elif missing := sorted(set(SIGNING_ALGORITHMS) - algorithms):
        # OpenID Connect ID tokens are RS256 unless a client asks for ES256 (docs/openid-connect.md):
        # without a key of its algorithm, a client's OpenID exchange is refused (invalid_request).
        problems.append(
            Warning(
                f"No {' or '.join(missing)} signing key exists: OpenID Connect clients whose ID tokens use it "
                "cannot sign in.",
                hint=" and ".join(f"`manage.py signingkey create --alg {alg}`" for alg in missing) + ".",
                id="config.W003",
            )
        )
    if not any(problem.id == "config.E003" for problem in problems):
        problems += _signing_keys_decrypt()
    problems += _jwt_signing_key_ready()
    return problems


def _signing_keys_decrypt() -> list[Error]:
    """A wrong OAUTH_SIGNING_KEY_ENCRYPTION_KEY passes every other check and answers 503 wherever
    a signature is needed (the status lists, OpenID and JWT exchanges): said here, before serving."""
    return [
        Error(
            problem,
            hint="Set OAUTH_SIGNING_KEY_ENCRYPTION_KEY to the value the keys were made under; if that value is "
            "lost, `manage.py signingkey retire KID` each such key and `manage.py signingkey create` new ones.",
            id="config.E005",
        )
        for problem in signing_keys_problems()
    ]


def _jwt_signing_key_ready() -> list:
    """JWT access tokens (signing.jwtokens) are signed by the current key of
    OAUTH_JWT_ACCESS_TOKEN_ALGORITHM: a retired one does not sign."""
    algorithm = settings.OAUTH_JWT_ACCESS_TOKEN_ALGORITHM
    jwt_servers = OAuthClient.objects.filter(
        client_serves_q(), client_type=ClientKind.RESOURCE_SERVER, token_format=TokenFormat.JWT
    )
    if not jwt_servers.exists() or signing_key_current(algorithm) is not None:
        return []
    return [
        Warning(
            f"No current {algorithm} signing key: JWT access tokens cannot be signed, so exchanges and refreshes "
            "for the resource servers registered for them are refused, and the token status lists answer 503.",
            hint=f"`manage.py signingkey create --alg {algorithm}` (or set OAUTH_JWT_ACCESS_TOKEN_ALGORITHM to the "
            "algorithm of a current key).",
            id="config.W004",
        )
    ]


@register(Tags.security, deploy=True)
def identity_provider_secrets_open(app_configs=None, databases=None, **kwargs) -> list[Error]:
    """An identity provider whose client secret does not open with OAUTH_SIGNING_KEY_ENCRYPTION_KEY is
    not offered at sign-in (the login page renders without it): its people cannot sign in. A
    database question: `check --deploy --database default`."""
    from django.db import DatabaseError

    from accounts.selectors import identity_provider_secret_problems

    if not databases or "default" not in databases:
        return []
    try:
        problems = identity_provider_secret_problems()
    except DatabaseError:
        return []  # the database's own checks report it
    return [
        Error(
            f"{problem} Nobody can sign in through it.",
            hint="Set OAUTH_SIGNING_KEY_ENCRYPTION_KEY to the value the secret was sealed under, or enter the "
            "provider's client secret again on its admin page (Identity providers).",
            id="accounts.E001",
        )
        for problem in problems
    ]


@register(Tags.database, deploy=True)
def status_triggers_ready(app_configs=None, databases=None, **kwargs) -> list[Error]:
    """The database sets JWT access tokens' status bits (signing.statuslist's triggers): a
    database without them would let a revoked JWT pass at every resource server until it expires.
    A deployment check, so that `migrate`, which installs them, is not stopped by their absence:
    `check --deploy --database default` asks it."""
    if not databases or "default" not in databases:
        return []
    try:
        missing = status_triggers_missing()
    except DatabaseError:
        return []  # the database's own checks report it
    if not missing:
        return []
    return [
        Error(
            f"The database lacks the status list triggers {', '.join(missing)}: revoked JWT access tokens "
            "would stay valid at the resource servers until they expire.",
            hint="Run `manage.py migrate`: it installs them after every migration.",
            id="config.E006",
        )
    ]
