"""State changes of a user's grants: consent given or refused, access revoked."""

from functools import cache

from django.db import connections, router, transaction
from django.utils import timezone

from oauthclients.audit import audit_announce_on_commit, audit_record
from oauthclients.models import (
    AccessToken,
    AuditAction,
    ClientAuditEvent,
    Consent,
    Grant,
    OAuthClient,
    RefreshToken,
)


def consent_record(*, user, client: OAuthClient, scopes: list[str]) -> Consent:
    """The user clicked Allow: remember the standing authorization and audit it."""
    now = timezone.now()
    detail = {"scopes": scopes, "unrestricted": not scopes}
    connection = connections[router.db_for_write(Consent)]
    if connection.vendor == "postgresql":
        return _consent_record_in_one_statement(connection, user=user, client=client, now=now, detail=detail)
    with transaction.atomic():
        # INSERT ... ON CONFLICT DO UPDATE: first_authorized_at is kept.
        (consent,) = Consent.objects.bulk_create(
            [Consent(user=user, client=client, first_authorized_at=now, last_authorized_at=now)],
            update_conflicts=True,
            unique_fields=["user", "client"],
            update_fields=["last_authorized_at"],
        )
        audit_record(client=client, actor=user, user=user, action=AuditAction.GRANT_AUTHORIZED, **detail)
    return consent


@cache
def _consent_sql(alias: str) -> str:
    quote = connections[alias].ops.quote_name

    def columns(model, *names):
        return {name: quote(model._meta.get_field(name).column) for name in names}

    c = columns(Consent, "id", "user", "client", "first_authorized_at", "last_authorized_at")
    e = columns(ClientAuditEvent, "id", "client", "actor", "user", "action", "detail", "created")
    consents, events = quote(Consent._meta.db_table), quote(ClientAuditEvent._meta.db_table)
    return (
        f"WITH consent AS (INSERT INTO {consents} ({c['user']}, {c['client']}, {c['first_authorized_at']}, "
        f"{c['last_authorized_at']}) VALUES (%(user)s, %(client)s, %(now)s, %(now)s) "
        f"ON CONFLICT ({c['user']}, {c['client']}) DO UPDATE "
        f"SET {c['last_authorized_at']} = EXCLUDED.{c['last_authorized_at']} "
        f"RETURNING {c['id']}, {c['first_authorized_at']}), "
        f"event AS (INSERT INTO {events} ({e['client']}, {e['actor']}, {e['user']}, {e['action']}, {e['detail']}, "
        f"{e['created']}) VALUES (%(client)s, %(user)s, %(user)s, %(action)s, %(detail)s, %(now)s) "
        f"RETURNING {e['id']}) "
        f"SELECT consent.{c['id']}, consent.{c['first_authorized_at']}, event.{e['id']} FROM consent, event"
    )


def _consent_record_in_one_statement(connection, *, user, client, now, detail) -> Consent:
    """The consent upsert and its audit row in one statement (two data-modifying CTEs): one
    round trip, atomic by itself, where the ORM needs a transaction and two statements."""
    action = AuditAction.GRANT_AUTHORIZED
    params = {
        "user": user.pk,
        "client": client.pk,
        "now": now,
        "action": action.value,
        "detail": ClientAuditEvent._meta.get_field("detail").get_db_prep_save(detail, connection),
    }
    with connection.cursor() as cursor:
        cursor.execute(_consent_sql(connection.alias), params)
        consent_id, first_authorized_at, event_id = cursor.fetchone()
    consent = Consent(
        id=consent_id, user=user, client=client, first_authorized_at=first_authorized_at, last_authorized_at=now
    )
    consent._state.adding, consent._state.db = False, connection.alias
    event = ClientAuditEvent(
        id=event_id, client=client, actor=user, user=user, action=action, detail=detail, created=now
    )
    event._state.adding, event._state.db = False, connection.alias
    audit_announce_on_commit(event)
    return consent


@transaction.atomic
def consent_deny(*, user, client: OAuthClient) -> None:
    audit_record(client=client, actor=user, user=user, action=AuditAction.GRANT_DENIED)


@transaction.atomic
def connected_app_revoke(*, user, client: OAuthClient) -> int:
    """Kill every token this client holds for this user, at once; returns how many families died."""
    now = timezone.now()
    families = RefreshToken.objects.filter(user=user, application=client, revoked__isnull=True).update(
        revoked=now, access_token=None, updated=now
    )
    AccessToken.objects.filter(user=user, application=client).delete()
    # Codes issued but not yet exchanged must not become tokens afterwards.
    Grant.objects.filter(user=user, application=client, used_at__isnull=True).update(used_at=now, token_family=None)
    Consent.objects.filter(user=user, client=client).delete()
    audit_record(client=client, actor=user, user=user, action=AuditAction.ACCESS_REVOKED, token_families=families)
    return families
