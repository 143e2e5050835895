"""Helpers for the client-registry service tests: builders, audit checks, a database scan."""

from django.db import connection
from django.utils import timezone

from oauthclients import services
from oauthclients.models import ClientAuditEvent, ClientKind, ClientSecret, OAuthClient
from signing.models import StatusList, StatusRevocation
from tests.factories import make_client


class AuditWriteFailed(Exception):
    """Stands in for any failure of the audit INSERT (disk full, lost connection, bug)."""


def break_audit(monkeypatch, action: str | None = None) -> None:
    """Make the audit write for `action` (or for every action) raise AuditWriteFailed."""
    real_create = ClientAuditEvent.objects.create

    def create(**fields):
        if action is None or fields.get("action") == action:
            raise AuditWriteFailed(fields.get("action"))
        return real_create(**fields)

    monkeypatch.setattr(ClientAuditEvent.objects, "create", create)


def make_legacy(owner) -> OAuthClient:
    """An approved legacy client: no scopes, tokens unrestricted."""
    return make_client(owner, is_legacy=True, approve=True).client


def make_public(owner) -> OAuthClient:
    return make_client(owner, kind=ClientKind.PUBLIC).client


def reject(client: OAuthClient, reviewer) -> OAuthClient:
    return services.client_reject(client=client, actor=reviewer, reason="The website does not load.")


def add_second_secret(client: OAuthClient, actor) -> tuple[ClientSecret, ClientSecret]:
    """Give a one-secret confidential client its second; returns both active secrets, oldest first."""
    second = services.client_secret_create(client=client, actor=actor).secret
    first = client.secrets.exclude(pk=second.pk).get()
    return first, second


def active_secrets(client: OAuthClient) -> list[ClientSecret]:
    return list(client.secrets.filter(revoked_at__isnull=True))


def stored(client: OAuthClient) -> OAuthClient:
    """The client as the database has it now."""
    return OAuthClient.objects.get(pk=client.pk)


def audit_events(client) -> list[ClientAuditEvent]:
    """The client's audit events, oldest first."""
    return list(ClientAuditEvent.objects.filter(client_id=client.pk).order_by("created", "id"))


def audit_actions(client) -> list[str]:
    return [event.action for event in audit_events(client)]


def assert_audited(event: ClientAuditEvent, *, client, actor, action, since) -> None:
    """Who, what, when, which client."""
    assert event.client_id == client.pk
    assert event.actor == actor
    assert event.action == action
    assert since <= event.created <= timezone.now()


def database_text() -> str:
    """Every value of every row of every table, as text: what a leaked database would show."""
    quote = connection.ops.quote_name
    values = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {quote(table)}")  # noqa: S608 - names come from introspection
            values.extend(str(value) for row in cursor.fetchall() for value in row)
    return "\n".join(values)


def status_bit(number: int, index: int) -> int | None:
    """The status bit of one token as the tables hold it (None: no such list)."""
    if not StatusList.objects.filter(number=number).exists():
        return None
    return int(StatusRevocation.objects.filter(status_list=number, index=index).exists())
