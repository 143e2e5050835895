"""The standing consent (tokens.models.Consent): written at Allow, read to skip the consent page,
ended with the user's grant.

Written with its audit row in one statement on PostgreSQL (and, with OAUTH_CONSENT_STATEMENT, with
the authorization code as well), through the ORM elsewhere. Ended by the registry's grants_end
(rejection, deletion, deactivation, Connected apps' revoke) through its `grants_ending` signal
(tokens.signals), since the registry sits below this app.
"""

from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from oauthclients.audit import audit_announce_on_commit, audit_record
from oauthclients.models import AuditAction, ClientAuditEvent, Grant, OAuthClient
from plumbing.compiled import quoted_columns
from plumbing.handwritten import handwritten_alias, insert_sql, saved
from tokens.models import Consent


@dataclass(frozen=True)
class StandingConsent:
    """What the user's last Allow for a client granted, and when."""

    authorized_at: datetime
    scopes: frozenset[str]
    unrestricted: bool


def consent_standing(*, user, client: OAuthClient) -> StandingConsent | None:
    """The user's standing consent to this client, or None: no query when the client was loaded
    with it for this user (the authorization pages' client, oauthflows.pages.authorization), else one."""
    if getattr(client, "standing_user_id", None) == user.pk:
        if client.standing_authorized_at is None:
            return None
        return StandingConsent(
            authorized_at=client.standing_authorized_at,
            scopes=frozenset(client.standing_scope.split()),
            unrestricted=client.standing_unrestricted,
        )
    row = (
        Consent.objects.filter(user=user, client=client)
        .values_list("last_authorized_at", "scope", "unrestricted")
        .first()
    )
    if row is None:
        return None
    return StandingConsent(authorized_at=row[0], scopes=frozenset(row[1].split()), unrestricted=row[2])


def consent_covers(*, standing: StandingConsent | None, client: OAuthClient, scopes: list[str]) -> bool:
    """Whether the user's standing consent to this approved client covers these scopes.

    The user's last Allow must have granted at least them (an unrestricted grant covers only an
    unrestricted request), after the client's last approval, so that nothing users are shown (and
    nothing they granted) has changed since. Revoking the app under Connected apps, a rejection,
    a deletion or the user's deactivation deletes the consent, so the page is shown again.
    """
    if not client.is_approved or standing is None:
        return False
    if client.reviewed_at is not None and standing.authorized_at < client.reviewed_at:
        return False
    if not scopes:
        return standing.unrestricted
    return set(scopes) <= standing.scopes


def consent_record(*, user, client: OAuthClient, scopes: list[str], code: Grant | None = None) -> Consent:
    """The user clicked Allow: remember the standing authorization and audit it.

    With `code` (an unsaved Grant: PostgreSQL only, see consent_records_with_code), the
    authorization code is written by the same statement as the consent and its audit row.
    """
    now = timezone.now()
    detail = {"scopes": scopes, "unrestricted": not scopes}
    alias = handwritten_alias(Consent)
    if alias is not None:
        return _consent_record_in_one_statement(
            connections[alias], user=user, client=client, now=now, detail=detail, code=code
        )
    if code is not None:
        raise ValueError("The code is written with the consent on PostgreSQL only (consent_records_with_code).")
    with transaction.atomic():
        # INSERT ... ON CONFLICT DO UPDATE: first_authorized_at is kept.
        (consent,) = Consent.objects.bulk_create(
            [
                Consent(
                    user=user,
                    client=client,
                    first_authorized_at=now,
                    last_authorized_at=now,
                    scope=" ".join(scopes),
                    unrestricted=not scopes,
                )
            ],
            update_conflicts=True,
            unique_fields=["user", "client"],
            update_fields=["last_authorized_at", "scope", "unrestricted"],
        )
        audit_record(client=client, actor=user, user=user, action=AuditAction.GRANT_AUTHORIZED, **detail)
    return consent


# The columns each CTE inserts, in the order of its VALUES: the parameters are built from these
# names (_consent_record_in_one_statement), so that a column and its value cannot drift apart.
CONSENT_COLUMNS = ("user", "client", "first_authorized_at", "last_authorized_at", "scope", "unrestricted")
EVENT_COLUMNS = ("client", "actor", "user", "action", "detail", "created")


@cache
def _consent_ctes(alias: str) -> str:
    """Two data-modifying CTEs, `consent` (the upsert) and `event` (its audit row); their
    parameters are the values of CONSENT_COLUMNS, then those of EVENT_COLUMNS."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    c = quoted_columns(connection, Consent, "id", *CONSENT_COLUMNS)
    e = quoted_columns(connection, ClientAuditEvent, "id", *EVENT_COLUMNS)
    consents, events = quote(Consent._meta.db_table), quote(ClientAuditEvent._meta.db_table)

    def values(columns: dict, names: tuple) -> str:
        return f"({', '.join(columns[name] for name in names)}) VALUES ({', '.join(['%s'] * len(names))})"

    return (
        f"consent AS (INSERT INTO {consents} {values(c, CONSENT_COLUMNS)} "
        f"ON CONFLICT ({c['user']}, {c['client']}) DO UPDATE "
        f"SET {c['last_authorized_at']} = EXCLUDED.{c['last_authorized_at']}, "
        f"{c['scope']} = EXCLUDED.{c['scope']}, {c['unrestricted']} = EXCLUDED.{c['unrestricted']} "
        f"RETURNING {c['id']} AS id, {c['first_authorized_at']} AS first_authorized_at), "
        f"event AS (INSERT INTO {events} {values(e, EVENT_COLUMNS)} RETURNING {e['id']} AS id)"
    )


def _consent_record_in_one_statement(connection, *, user, client, now, detail, code: Grant | None = None) -> Consent:
    """The consent upsert and its audit row in one statement (two data-modifying CTEs): one
    round trip, atomic by itself, where the ORM needs a transaction and two statements. With
    `code` (an unsaved Grant), the authorization code is inserted by the same statement."""
    action = AuditAction.GRANT_AUTHORIZED
    detail_value = ClientAuditEvent._meta.get_field("detail").get_db_prep_save(detail, connection)
    scope, unrestricted = " ".join(detail["scopes"]), detail["unrestricted"]
    consent_values = {
        "user": user.pk,
        "client": client.pk,
        "first_authorized_at": now,
        "last_authorized_at": now,
        "scope": scope,
        "unrestricted": unrestricted,
    }
    event_values = {
        "client": client.pk,
        "actor": user.pk,
        "user": user.pk,
        "action": action.value,
        "detail": detail_value,
        "created": now,
    }
    params = [consent_values[name] for name in CONSENT_COLUMNS] + [event_values[name] for name in EVENT_COLUMNS]
    ctes, selected, sources = (
        [_consent_ctes(connection.alias)],
        ["consent.id", "consent.first_authorized_at", "event.id"],
        ["consent", "event"],
    )
    if code is not None:
        code_sql, code_params = insert_sql(connection, code)
        ctes.insert(0, f"code AS ({code_sql})")
        selected.append("code.id")
        sources.append("code")
        params = code_params + params
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(ctes)} SELECT {', '.join(selected)} FROM {', '.join(sources)}", params)
        consent_id, first_authorized_at, event_id, *code_id = cursor.fetchone()
    if code is not None:
        code.pk = code_id[0]
        saved(code, connection.alias)
    consent = Consent(
        id=consent_id,
        user=user,
        client=client,
        first_authorized_at=first_authorized_at,
        last_authorized_at=now,
        scope=scope,
        unrestricted=unrestricted,
    )
    event = ClientAuditEvent(
        id=event_id, client=client, actor=user, user=user, action=action, detail=detail, created=now
    )
    saved(consent, connection.alias)
    audit_announce_on_commit(saved(event, connection.alias))
    return consent


def consent_records_with_code() -> bool:
    """Whether the authorization code is written with its consent and audit row in one
    statement (PostgreSQL: consent_record with `code`); elsewhere consent_record follows it."""
    return settings.OAUTH_CONSENT_STATEMENT and handwritten_alias(Consent) is not None


def consents_end(*, client: OAuthClient | None = None, user=None) -> int:
    """Delete the standing consents of `client`, of `user`, or of `user` with `client` (the
    registry's grants_end, through grants_ending); how many were deleted."""
    of = {key: value for key, value in (("client", client), ("user", user)) if value is not None}
    if not of:
        raise ValueError("consents_end ends the consents of a client, of a user, or of both: name one.")
    deleted, _ = Consent.objects.filter(**of).delete()
    return deleted
