"""Redeeming an authorization code or a refresh token in one statement (PostgreSQL).

The token endpoint used to lock the row (`SELECT … FOR UPDATE`), check it in Python, and write
it later (`UPDATE`, and for a refresh the `DELETE` of the old access token): three round trips.
Here the checks are the statement's WHERE clause and the writes its body, so a redemption that
can succeed is one `UPDATE … RETURNING` (a code) or one statement of data-modifying CTEs (a
refresh token: lock, revoke, delete its access token). Exactly once holds as before: the row
lock is taken by the statement, and a concurrent redemption of the same value waits for it,
then re-checks the WHERE clause against the committed row, finds it redeemed, and claims
nothing (tests/integration/test_exactly_once.py, tests/oauthclients/test_concurrency.py).

A claim that finds nothing is not an answer: the caller falls back to its full path (a SELECT
FOR UPDATE and the checks one by one), which tells a replay from an unknown, expired or
mismatched value, gives the precise error and revokes a replayed family. The fast path only
ever takes what the full path would have granted. On other databases (SQLite, for development)
the claims return None and the full path does everything (the one switch:
plumbing.handwritten.handwritten_alias). Both statements are registered SQL twins of
tokens.liveness.token_ended, compared with it on the same rows by tests/test_sql_twins.py; the
client's status is not in them, since only an approved client's redemption takes them
(oauthclients.policy.client_claims_without_owner_check).

The bench's floor (bench/floor.py) redeems with these same statements, so that the comparison
stays about what surrounds the database work.

Replaces: Validator.validate_code / invalidate_authorization_code and validate_refresh_token's
`select_for_update()…first()` + `save()` / `update()` / `delete()` (the full path, still there and
switched on for every request by OAUTH_FAST_REDEMPTION=0). Justified by (docs/performance.md, "The hot paths",
3): exchange 5 → 4 statements, refresh 6 → 4; bench refresh 0.82 → 1.00 × its floor, exchange
0.74 → 0.98 ×. Kept honest by tests/tokens/test_redemption_paths.py (the same scenarios both
ways, answers and rows compared, PostgreSQL) and tests/tokens/test_redemption.py.
"""

import base64
import hashlib
import uuid
from datetime import datetime
from functools import cache

from django.contrib.auth import get_user_model
from django.db import connections, router

from oauthclients.models import AccessToken, Grant, RefreshToken, digest
from plumbing.compiled import quoted_columns
from plumbing.handwritten import handwritten_alias, instance, json_value, sql_twin


def _names(model, *fields: str) -> dict[str, str]:  # built for the switch's alias (handwritten_alias)
    return quoted_columns(connections[router.db_for_write(model)], model, *fields)


# What a code's claim returns, in the order of its RETURNING: the row is read back by these names
# (dict(zip(...))), so a column and its value cannot drift apart. OpenID Connect's nonce, auth_time,
# sid and amr ride along: the ID token needs no second read.
GRANT_RETURNING = (
    "id",
    "user",
    "scope",
    "expires",
    "code_challenge",
    "code_challenge_method",
    "resource",
    "nonce",
    "auth_time",
    "sid",
    "amr",
)


@sql_twin(
    mirrors="tokens.liveness.token_ended",
    decides="a code is redeemable: unused, unexpired, its user active (and bound to client, redirect URI, PKCE)",
)
@cache
def _grant_sql(with_verifier: bool) -> str:
    g = _names(
        Grant,
        "id",
        "code",
        "application",
        "user",
        "used_at",
        "token_family",
        "updated",
        "expires",
        "redirect_uri",
        "scope",
        "code_challenge",
        "code_challenge_method",
        "resource",
        "nonce",
        "auth_time",
        "sid",
        "amr",
    )
    quote = connections[router.db_for_write(Grant)].ops.quote_name
    table = quote(Grant._meta.db_table)
    user_model = get_user_model()
    u = _names(user_model, "id", "is_active")
    user_table = quote(user_model._meta.db_table)
    # S256 only (the authorization endpoint takes no other method). The statement carries the
    # verifier's S256, which is the public code_challenge, never the verifier: SQL can be logged.
    pkce = (
        f"{g['code_challenge_method']} = 'S256' AND {g['code_challenge']} = %(s256)s"
        if with_verifier
        else f"{g['code_challenge']} = ''"
    )
    return (
        f"UPDATE {table} SET {g['used_at']} = %(now)s, {g['token_family']} = %(family)s, {g['updated']} = %(now)s "
        f"WHERE {g['code']} = %(code)s AND {g['application']} = %(client)s AND {g['used_at']} IS NULL "
        f"AND {g['expires']} > %(now)s AND {g['redirect_uri']} = %(redirect_uri)s AND {pkce} "
        # A code of a user deactivated since it was issued is not redeemed (SECURITY.md).
        f"AND EXISTS (SELECT 1 FROM {user_table} u WHERE u.{u['id']} = {table}.{g['user']} AND u.{u['is_active']}) "
        f"RETURNING {', '.join(g[name] for name in GRANT_RETURNING)}"
    )


def _user(alias: str, user_id: int):
    """The user by primary key, every other column deferred (loaded only if read)."""
    return instance(get_user_model(), alias, {"id": user_id})


def grant_claim(
    *, code: str, client_pk: int, redirect_uri: str, verifier: str | None, now: datetime
) -> tuple[Grant, uuid.UUID] | None:
    """Mark the unused, unexpired code as used if redirect_uri and PKCE match; the grant and the
    new token family, or None (no such code, or any check fails: use the full path)."""
    alias = handwritten_alias(Grant)
    if alias is None:
        return None
    family = uuid.uuid4()
    params = {
        "now": now,
        "family": family,
        "code": digest(code),
        "client": client_pk,
        "redirect_uri": redirect_uri,
    }
    if verifier is not None:
        params["s256"] = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()
        )
    with connections[alias].cursor() as cursor:
        cursor.execute(_grant_sql(verifier is not None), params)
        row = cursor.fetchone()
    if row is None:
        return None
    claimed = dict(zip(GRANT_RETURNING, row, strict=True))
    grant = instance(
        Grant,
        alias,
        {
            "id": claimed["id"],
            "user_id": claimed["user"],
            "application_id": client_pk,
            "expires": claimed["expires"],
            "redirect_uri": redirect_uri,
            "scope": claimed["scope"],
            "code_challenge": claimed["code_challenge"],
            "code_challenge_method": claimed["code_challenge_method"],
            "resource": json_value(Grant, "resource", claimed["resource"], alias),
            "nonce": claimed["nonce"],
            "auth_time": claimed["auth_time"],
            "sid": claimed["sid"],
            "amr": claimed["amr"],
            "used_at": now,
            "token_family": family,
        },
    )
    Grant._meta.get_field("user").set_cached_value(grant, _user(alias, claimed["user"]))
    return grant, family


# What a refresh token's claim returns, in the order of the `claimed` CTE's RETURNING: the refresh
# token's own columns, then its access token's as they were (`old`, read before the DELETE). The
# row is read back by these names.
REFRESH_RETURNING = ("id", "user", "token_family", "created", "resource", "auth_time")
OLD_ACCESS_RETURNING = ("access_token_id", "scope", "expires", "status_list", "status_index")


@sql_twin(
    mirrors="tokens.liveness.token_ended",
    decides="a refresh token is alive: not revoked, its access token there and within the lifetime, its user active",
)
@cache
def _refresh_sql() -> str:
    quote = connections[router.db_for_write(RefreshToken)].ops.quote_name
    r = _names(
        RefreshToken,
        "id",
        "token_checksum",
        "revoked",
        "application",
        "access_token",
        "user",
        "updated",
        "token_family",
        "created",
        "resource",
        "auth_time",
    )
    a = _names(AccessToken, "id", "expires", "scope", "status_list", "status_index")
    user_model = get_user_model()
    u = _names(user_model, "id", "is_active")
    refresh_table, access_table = quote(RefreshToken._meta.db_table), quote(AccessToken._meta.db_table)
    user_table = quote(user_model._meta.db_table)
    return (
        f"WITH old AS ("
        f"SELECT r.{r['id']} AS id, r.{r['access_token']} AS access_token_id, a.{a['scope']} AS scope, "
        f"a.{a['expires']} AS expires, a.{a['status_list']} AS status_list, a.{a['status_index']} AS status_index "
        f"FROM {refresh_table} r JOIN {access_table} a ON a.{a['id']} = r.{r['access_token']} "
        f"JOIN {user_table} u ON u.{u['id']} = r.{r['user']} "
        f"WHERE r.{r['token_checksum']} = %(checksum)s AND r.{r['revoked']} IS NULL "
        f"AND r.{r['application']} = %(client)s AND a.{a['expires']} > %(alive_after)s AND u.{u['is_active']} "
        f"FOR UPDATE OF r), "
        f"claimed AS (UPDATE {refresh_table} SET {r['revoked']} = %(now)s, {r['access_token']} = NULL, "
        f"{r['updated']} = %(now)s FROM old WHERE {refresh_table}.{r['id']} = old.id "
        f"RETURNING {', '.join(f'{refresh_table}.{r[name]}' for name in REFRESH_RETURNING)}, "
        f"{', '.join(f'old.{name}' for name in OLD_ACCESS_RETURNING)}), "
        # A JWT's status bit is set by the database's trigger as its row goes (signing.statuslist).
        f"gone AS (DELETE FROM {access_table} WHERE {a['id']} IN (SELECT access_token_id FROM claimed)) "
        f"SELECT * FROM claimed"
    )


def refresh_token_claim(*, raw: str, client_pk: int, now: datetime, alive_after: datetime) -> RefreshToken | None:
    """Revoke the live refresh token (its access token expiring after `alive_after`, its user
    active) and delete its access token; the token as it was, or None (use the full path).

    The returned token's `access_token` is the deleted access token as it was (scope, expiry, a
    JWT's status list place), for the new pair's scope and the old JWT's status bit; its `revoked`
    is set.
    """
    alias = handwritten_alias(RefreshToken)
    if alias is None:
        return None
    params = {"checksum": digest(raw), "client": client_pk, "now": now, "alive_after": alive_after}
    with connections[alias].cursor() as cursor:
        cursor.execute(_refresh_sql(), params)
        row = cursor.fetchone()
    if row is None:
        return None
    claimed = dict(zip(REFRESH_RETURNING + OLD_ACCESS_RETURNING, row, strict=True))
    token = instance(
        RefreshToken,
        alias,
        {
            "id": claimed["id"],
            "user_id": claimed["user"],
            "application_id": client_pk,
            "access_token_id": claimed["access_token_id"],
            "created": claimed["created"],
            "revoked": now,
            "token_family": claimed["token_family"],
            "resource": json_value(RefreshToken, "resource", claimed["resource"], alias),
            "auth_time": claimed["auth_time"],
        },
    )
    # A JWT's status list place rides along: the caller sets its bit (signing.statuslist).
    access = instance(
        AccessToken,
        alias,
        {
            "id": claimed["access_token_id"],
            "expires": claimed["expires"],
            "scope": claimed["scope"],
            "status_list": claimed["status_list"],
            "status_index": claimed["status_index"],
        },
    )
    RefreshToken._meta.get_field("access_token").set_cached_value(token, access)
    RefreshToken._meta.get_field("user").set_cached_value(token, _user(alias, claimed["user"]))
    return token
