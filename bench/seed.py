"""Seed a bench database: `python -m bench.seed {project,stock,grow} ...` (run by bench/run.py).

Run with DJANGO_SETTINGS_MODULE=config.settings_bench (project) or bench.stock_settings (stock)
and the same DJANGO_SECRET_KEY as the server, since the seeded sessions carry a hash made with
it. Writes a JSON file with what the load generator needs (client credentials, session keys,
how many numbered tokens and codes exist; bench.common has their formats).

Access tokens and authorization codes are written with one INSERT ... SELECT FROM
generate_series each, directly in SQL (a million tokens take seconds); the client and users go
through the normal code (the project's services; DOT's Application model, which hashes the
secret with PBKDF2 as stock DOT does).
"""

import argparse
import json
import os
import secrets
import sys
import time
from importlib import import_module

import django

from bench.common import (
    CODE_VALUE_SQL,
    EXCHANGE_RESOURCE,
    JWT_RESOURCE,
    MCP_RESOURCE,
    REDIRECT_URI,
    TOKEN_VALUE_SQL,
    sha256_sql,
)

LONG_LIFETIME = "interval '1 day'"  # far beyond any bench run: nothing seeded expires during one
SPA_ORIGIN = "https://spa.bench.example"  # scenario 8's approved single-page app
REGISTERED_DOMAIN = "bench.example"  # scenario 8: agent-<n>.bench.example, one per registered client


def _insert_series(model, start: int, stop: int, exprs: dict, *, order_by: str | None = None) -> int:
    """INSERT one row of `model` per i in [start, stop); `exprs` maps attname -> (sql, params).

    Columns not named get the field's Python default, so a column added to the model later
    still gets a value; `created`/`updated` (auto_now) get now(). Rows are inserted in the order
    of the `order_by` attname, so that its index is appended to instead of written at random.
    """
    from django.db import connection

    exprs = {"created": ("now()", []), "updated": ("now()", []), **exprs}
    qn = connection.ops.quote_name
    columns, values, params = [], [], []
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(qn(field.column))
        if field.attname in exprs:
            sql, sql_params = exprs[field.attname]
            values.append(sql)
            params.extend(sql_params)
        else:
            values.append("%s")
            params.append(field.get_db_prep_save(field.get_default(), connection))
    sql = (
        f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM generate_series(%s::bigint, %s::bigint) AS i"
    )
    if order_by:
        sql += f" ORDER BY {1 + columns.index(qn(model._meta.get_field(order_by).column))}"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, start, stop - 1])
        return cursor.rowcount


def _round_robin(user_ids: list[int]) -> tuple[str, list]:
    return "(%s::bigint[])[1 + mod(i, %s)]", [user_ids, len(user_ids)]


def _sessions(users) -> list[str]:
    """A logged-in session per user, as django.contrib.auth.login would leave it."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    store = import_module(settings.SESSION_ENGINE).SessionStore
    keys = []
    for user in users:
        session = store()
        session[SESSION_KEY] = user._meta.pk.value_to_string(user)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        keys.append(session.session_key)
    return keys


def _users(count: int):
    from django.contrib.auth import get_user_model

    User = get_user_model()
    owner = User.objects.create_user("bench-developer", email="bench-developer@example.com", password=None)
    end_users = [
        User.objects.create_user(f"bench-user-{n}", email=f"bench-user-{n}@example.com", password=None)
        for n in range(count)
    ]
    return owner, end_users


# Scenario 9: the password the first LOGIN_USERS bench users sign in with (hashed as in production).
LOGIN_PASSWORD = "bench-login-passphrase-1"
LOGIN_USERS = 8


def _login_users(end_users) -> list[str]:
    for user in end_users[:LOGIN_USERS]:
        user.set_password(LOGIN_PASSWORD)
        user.save(update_fields=["password"])
    return [user.username for user in end_users[:LOGIN_USERS]]


# Scenario 9's other accounts, each with LOGIN_PASSWORD: for the trial "Django's default hasher", its
# own users whose hashes are Django's default (PBKDF2, 1,000,000 iterations), so that neither server
# upgrades the other's hashes (bench.run.HASHER_TRIAL); one account with each number of live
# sessions the statements are measured at (bench.run.login_statements); and the TOTP sign-ins'
# accounts, each with an authenticator app whose secret the load generator is given: a code is used
# once, so each account signs in once per 30 s period, and the load generator takes the next one.
DEFAULT_HASHER_LOGIN_USERS = 8
SESSION_PROBES = (1, 50)


def _seed_login(totp_users: int) -> dict:
    from allauth.mfa.models import Authenticator
    from allauth.mfa.totp.internal.auth import generate_totp_secret
    from allauth.usersessions.models import UserSession
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import PBKDF2PasswordHasher, make_password

    from accounts.adapter import MFAAdapter

    User = get_user_model()
    project_hash = make_password(LOGIN_PASSWORD)  # PASSWORD_HASHERS[0]: the project's Argon2id
    default_hash = make_password(LOGIN_PASSWORD, hasher=PBKDF2PasswordHasher())

    def users(prefix: str, count: int, encoded: str) -> list:
        return User.objects.bulk_create(
            User(username=f"{prefix}-{n}", email=f"{prefix}-{n}@example.com", password=encoded) for n in range(count)
        )

    default_hasher = users("bench-pbkdf2", DEFAULT_HASHER_LOGIN_USERS, default_hash)
    probes = {}
    for count in SESSION_PROBES:
        (user,) = users(f"bench-sessions-{count}", 1, project_hash)
        UserSession.objects.bulk_create(
            UserSession(user=user, session_key=key, ip="127.0.0.1", user_agent="bench")
            for key in _sessions([user] * count)
        )
        probes[str(count)] = user.username
    secrets_by_user = {}
    totp = users("bench-totp", totp_users, project_hash)
    adapter = MFAAdapter()
    authenticators = []
    for user in totp:
        secrets_by_user[user.username] = generate_totp_secret()
        data = {"secret": adapter.encrypt(secrets_by_user[user.username])}
        authenticators.append(Authenticator(user=user, type=Authenticator.Type.TOTP, data=data))
    Authenticator.objects.bulk_create(authenticators)
    return {
        "default_hasher_login_users": [user.username for user in default_hasher],
        "session_probe_users": probes,
        "totp_users": list(secrets_by_user.items()),
    }


def seed_project(
    users: int, tokens: int, codes: int, jwt_codes: int = 0, exchange_tokens: int = 0, totp_users: int = 0
) -> dict:
    from oauthclients import services
    from oauthclients.models import AccessToken, Grant

    owner, end_users = _users(users)
    # Before the sessions are made: a session keeps its user's password hash (Django's session hash).
    login_users = _login_users(end_users)
    scope = "PROFILE_READ BOOKING_READ"
    created = services.client_create(
        owner=owner,
        actor=owner,
        name="Bench App",
        purpose="Load benchmark.",
        website_url="http://127.0.0.1:8765/",
        kind="confidential",
        redirect_uris=[REDIRECT_URI],
        scopes=scope.split(),
        is_legacy=False,
        approve=True,
    )
    client = created.client
    # Scenarios 5 and 6: the credentials a resource server introspects with.
    resource_server = services.resource_server_create(owner=owner, name="Bench Bookings API", actor=owner)
    user_ids = [user.pk for user in end_users]
    seed = {
        "resource_server_id": resource_server.client.client_id,
        "resource_server_secret": resource_server.secret.plaintext,
        "client_id": client.client_id,
        "client_pk": client.pk,
        "client_secret": created.secret.plaintext,
        "redirect_uri": REDIRECT_URI,
        "scope": scope,
        "user_ids": user_ids,
        "sessions": _sessions(end_users),
        "login_users": login_users,
        "login_password": LOGIN_PASSWORD,
    }
    seed.update(_seed_login(totp_users))
    seed["tokens"] = _seed_tokens(AccessToken, seed, 0, tokens, stored_token="''")
    # Scenario 8: an approved single-page app whose origin reads /v2/me (CORS, oauthflows/cors.py).
    services.client_create(
        owner=owner,
        actor=owner,
        name="Bench SPA",
        purpose="Load benchmark (CORS).",
        website_url=SPA_ORIGIN,
        kind="public",
        redirect_uris=[SPA_ORIGIN + "/callback"],
        scopes=["PROFILE_READ"],
        approve=True,
    )
    seed["spa_origin"] = SPA_ORIGIN
    if jwt_codes:
        seed.update(_seed_jwt(owner, seed, tokens, codes, jwt_codes))
    if exchange_tokens:
        seed.update(_seed_exchange(owner, seed, exchange_tokens))
    seed["codes"] = _insert_series(
        Grant,
        0,
        codes,
        {
            "user_id": _round_robin(user_ids),
            "application_id": ("%s", [client.pk]),
            "code": (sha256_sql(CODE_VALUE_SQL), []),
            "redirect_uri": ("%s", [REDIRECT_URI]),
            "scope": ("%s", [scope]),
            "expires": (f"now() + {LONG_LIFETIME}", []),
        },
    )
    return seed


def _seed_jwt(owner, seed: dict, tokens: int, codes: int, jwt_codes: int) -> dict:
    """JWT access tokens (signing.jwtokens): a resource server registered for them, a signing
    key, `tokens` live JWTs bound to it (scenario 6's example service in JWT mode), and codes
    numbered [codes, codes + jwt_codes) bound to it (scenarios 2 and 3 issuing JWTs)."""
    import random
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone
    from oauth2_provider.models import set_token_value

    from oauthclients import services
    from oauthclients.models import AccessToken, Grant, OAuthClient
    from signing.jwtokens import access_token_jwt
    from signing.keys import signing_key_create

    signing_key_create(algorithm="ES256")
    server = services.resource_server_create(
        owner=owner, name="Bench JWT Bookings API", resource_uri=JWT_RESOURCE, actor=owner, token_format="jwt"
    )
    client = OAuthClient.objects.get(pk=seed["client_pk"])
    jwts, rows = [], []
    for number in range(tokens):
        user_id = seed["user_ids"][number % len(seed["user_ids"])]
        token, (status_list, status_index) = access_token_jwt(
            user_pk=user_id,
            client_id=client.client_id,
            scope=seed["scope"],
            audience=[JWT_RESOURCE],
            auth_time=int(time.time()),
            lifetime=86400,
        )
        row = AccessToken(
            user_id=user_id,
            application=client,
            scope=seed["scope"],
            expires=timezone.now() + timedelta(days=1),
            resource=[JWT_RESOURCE],
            status_list=status_list,
            status_index=status_index,
        )
        set_token_value(row, token)
        rows.append(row)
        jwts.append(token)
    AccessToken.objects.bulk_create(rows)
    user_ids = seed["user_ids"]
    _insert_series(
        Grant,
        codes,
        codes + jwt_codes,
        {
            "user_id": _round_robin(user_ids),
            "application_id": ("%s", [client.pk]),
            "code": (sha256_sql(CODE_VALUE_SQL), []),
            "redirect_uri": ("%s", [REDIRECT_URI]),
            "scope": ("%s", [seed["scope"]]),
            "expires": (f"now() + {LONG_LIFETIME}", []),
            "resource": ("%s::jsonb", [json.dumps([JWT_RESOURCE])]),
        },
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(Grant._meta.db_table)}")
    random.shuffle(jwts)
    return {
        "jwt_tokens": jwts,
        "jwt_codes": [codes, codes + jwt_codes],
        "jwt_resource_server_id": server.client.client_id,
        "jwt_resource_server_secret": server.secret.plaintext,
    }


# Scenario 10's tokens are numbered from here: the grown database numbers its million tokens on
# from the seeded ones (grow_project), and the two series must never meet.
EXCHANGE_TOKEN_BASE = 1_000_000_000


def _seed_exchange(owner, seed: dict, count: int) -> dict:
    """Scenario 10 (RFC 8693): the MCP server (a resource server allowed to exchange toward the
    bookings service), the bookings service, and access tokens numbered from EXCHANGE_TOKEN_BASE,
    bound to the MCP server, as an agent's would be."""
    from oauthclients import services
    from oauthclients.exchangetargets import client_exchange_targets_set
    from oauthclients.models import AccessToken

    bookings = services.resource_server_create(
        owner=owner, name="Bench bookings (exchange)", resource_uri=EXCHANGE_RESOURCE, actor=owner
    )
    mcp = services.resource_server_create(owner=owner, name="Bench MCP", resource_uri=MCP_RESOURCE, actor=owner)
    client_exchange_targets_set(client=mcp.client, resource_uris=[EXCHANGE_RESOURCE], actor=owner)
    start, stop = EXCHANGE_TOKEN_BASE, EXCHANGE_TOKEN_BASE + count
    _seed_tokens(AccessToken, seed, start, stop, stored_token="''", resource=json.dumps([MCP_RESOURCE]))
    return {
        "exchange_tokens": [start, stop],
        "mcp_id": mcp.client.client_id,
        "mcp_secret": mcp.secret.plaintext,
        "exchange_bookings_id": bookings.client.client_id,
        "exchange_bookings_secret": bookings.secret.plaintext,
    }


def _seed_tokens(model, seed: dict, start: int, stop: int, *, stored_token: str, resource: str | None = None) -> int:
    """Live access tokens numbered [start, stop), spread over the bench users."""
    from django.db import DatabaseError, connection, transaction

    with connection.cursor() as cursor:
        # The user and client exist (seeded above), so the per-row foreign-key checks at commit
        # are skipped, as pg_restore --disable-triggers does: a million rows load in a third of
        # the time. Needs a superuser (the local postgres); without one they just run.
        try:
            with transaction.atomic():
                cursor.execute("SET LOCAL session_replication_role = replica")
        except DatabaseError:
            pass
    added = _insert_series(
        model,
        start,
        stop,
        {
            "user_id": _round_robin(seed["user_ids"]),
            "application_id": ("%s", [seed["client_pk"]]),
            "token": (stored_token, []),
            "token_checksum": (sha256_sql(TOKEN_VALUE_SQL), []),
            "scope": ("%s", [seed["scope"]]),
            "expires": (f"now() + {LONG_LIFETIME}", []),
            **({"resource": ("%s::jsonb", [resource])} if resource else {}),
        },
        order_by="token_checksum",
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
    return added


def seed_stock(users: int, tokens: int, codes: int) -> dict:
    from oauth2_provider.models import AccessToken, Grant, get_application_model

    owner, end_users = _users(users)
    secret = secrets.token_urlsafe(32)
    # Stock DOT: the secret is hashed on save with Django's default hasher (PBKDF2).
    client = get_application_model().objects.create(
        name="Bench App",
        user=owner,
        client_type="confidential",
        authorization_grant_type="authorization-code",
        redirect_uris=REDIRECT_URI,
        client_secret=secret,
    )
    scope = "read"
    user_ids = [user.pk for user in end_users]
    seed = {
        "client_id": client.client_id,
        "client_pk": client.pk,
        "client_secret": secret,
        "redirect_uri": REDIRECT_URI,
        "scope": scope,
        "user_ids": user_ids,
        "sessions": _sessions(end_users),
    }
    # Stock storage: the token in plaintext and its checksum; the code in plaintext.
    seed["tokens"] = _seed_tokens(AccessToken, seed, 0, tokens, stored_token=TOKEN_VALUE_SQL)
    seed["codes"] = _insert_series(
        Grant,
        0,
        codes,
        {
            "user_id": _round_robin(user_ids),
            "application_id": ("%s", [client.pk]),
            "code": (CODE_VALUE_SQL, []),
            "redirect_uri": ("%s", [REDIRECT_URI]),
            "scope": ("%s", [scope]),
            "expires": (f"now() + {LONG_LIFETIME}", []),
        },
    )
    return seed


def register_clients(seed: dict, count: int) -> dict:
    """Scenario 8: `count` self-registered (unverified) public clients, as open registration leaves
    them, each with a redirect URI at an origin of its own, except that one in ten names MCP
    Inspector's loopback origin and one in a hundred the bench SPA's (registrations that squat an
    approved app's origin); their ClientOrigin rows as oauthclients.services writes them. Two
    INSERT ... SELECT statements: 100,000 clients take seconds."""
    from django.db import connection

    from oauthclients.models import ClientOrigin, OAuthClient
    from oauthclients.services import self_registered_owner

    origin = (
        "CASE WHEN mod(i, 100) = 0 THEN %s WHEN mod(i, 10) = 0 THEN 'http://localhost:6274' "
        "ELSE 'https://agent-' || i || '.' || %s END",
        [SPA_ORIGIN, REGISTERED_DOMAIN],
    )
    added = _insert_series(
        OAuthClient,
        0,
        count,
        {
            "user_id": ("%s", [self_registered_owner().pk]),
            "client_id": ("'bench-agent-' || i", []),
            "name": ("'Agent ' || i", []),
            "client_type": ("'public'", []),
            "status": ("'unverified'", []),
            "registration_source": ("'dcr'", []),
            "scopes": ("'PROFILE_READ'", []),
            "redirect_uris": (f"({origin[0]}) || '/callback'", origin[1]),
        },
    )
    qn = connection.ops.quote_name
    clients, origins = qn(OAuthClient._meta.db_table), qn(ClientOrigin._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {origins} (client_id, origin, approved) "
            f"SELECT id, left(redirect_uris, length(redirect_uris) - length('/callback')), false FROM {clients} "
            "WHERE client_id LIKE 'bench-agent-%%'"
        )
        cursor.execute(f"ANALYZE {clients}")
        cursor.execute(f"ANALYZE {origins}")
    seed["registered_clients"] = added
    seed["registered_domain"] = REGISTERED_DOMAIN
    return seed


def grow_project(seed: dict, total: int) -> dict:
    """More live access tokens in the project's table, numbered on from the seeded ones."""
    from oauthclients.models import AccessToken

    seed["tokens"] += _seed_tokens(AccessToken, seed, seed["tokens"], total, stored_token="''")
    return seed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["project", "stock", "grow", "register"])
    parser.add_argument("--seed", required=True, help="the JSON file to write (grow: to read and update)")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=1000, help="live access tokens (grow: the new total)")
    parser.add_argument("--codes", type=int, default=50000)
    parser.add_argument("--clients", type=int, default=100_000, help="register: self-registered clients to add")
    parser.add_argument("--jwt-codes", type=int, default=0, help="project: codes bound to the JWT resource server")
    parser.add_argument("--exchange-tokens", type=int, default=0, help="project: tokens bound to the MCP server")
    parser.add_argument("--totp-users", type=int, default=0, help="project: accounts with an authenticator app")
    args = parser.parse_args(argv)

    django.setup()
    from django.db import transaction

    started = time.monotonic()
    with transaction.atomic():
        if args.what == "project":
            seed = seed_project(
                args.users, args.tokens, args.codes, args.jwt_codes, args.exchange_tokens, args.totp_users
            )
        elif args.what == "stock":
            seed = seed_stock(args.users, args.tokens, args.codes)
        elif args.what == "register":
            with open(args.seed) as fh:
                seed = register_clients(json.load(fh), args.clients)
        else:
            with open(args.seed) as fh:
                seed = grow_project(json.load(fh), args.tokens)
    tmp = args.seed + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
        json.dump(seed, fh)
    os.replace(tmp, args.seed)
    print(
        f"seeded {args.what}: {seed['tokens']} access tokens, {seed['codes']} codes, "
        f"{len(seed['sessions'])} sessions in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
