"""The admin's morning view: the last 24 hours, from shared, bounded data (the review queue and the
audit trail, and the hourly counts every process writes: operations.hourly). A handful of indexed
queries, run when an administrator opens the admin's index."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Min, Sum
from django.utils import timezone

from oauthclients.models import AuditAction, ClientAuditEvent, ClientStatus, OAuthClient
from operations import hourly
from operations.models import HourlyCount

HOURS = 24
TOP_CLIENTS = 5


@dataclass(frozen=True)
class RefusedClient:
    client_id: str
    name: str  # "" for a client_id that names no client (someone guessing)
    refusals: int


@dataclass(frozen=True)
class MorningView:
    awaiting_review: int
    oldest_waiting_since: datetime | None
    self_registrations: int
    tokens_issued: int
    tokens_refused: int
    most_refused: list[RefusedClient]
    ratelimit_refusals: int


def morning_view_get() -> MorningView:
    """The last 24 hours (the hourly counts: the current hour and the 23 before it)."""
    now = timezone.now()
    hourly.flush()  # this process's own last seconds too
    queue = OAuthClient.objects.filter(status=ClientStatus.PENDING).aggregate(count=Count("id"), oldest=Min("created"))
    registered = ClientAuditEvent.objects.filter(
        action=AuditAction.CLIENT_SELF_REGISTERED, created__gte=now - timedelta(hours=HOURS)
    ).count()
    recent = HourlyCount.objects.filter(hour__gt=hourly.current_hour() - HOURS)
    totals = dict(
        recent.filter(name__in=[hourly.TOKENS_ISSUED, hourly.TOKENS_REFUSED, hourly.RATELIMIT_REFUSED])
        .values("name")
        .annotate(total=Sum("count"))
        .values_list("name", "total")
    )
    top = list(
        recent.filter(name=hourly.REFUSALS_BY_CLIENT)
        .values("label")
        .annotate(total=Sum("count"))
        .order_by("-total", "label")
        .values_list("label", "total")[:TOP_CLIENTS]
    )
    names = dict(OAuthClient.objects.filter(client_id__in=[label for label, _ in top]).values_list("client_id", "name"))
    return MorningView(
        awaiting_review=queue["count"],
        oldest_waiting_since=queue["oldest"],
        self_registrations=registered,
        tokens_issued=totals.get(hourly.TOKENS_ISSUED, 0),
        tokens_refused=totals.get(hourly.TOKENS_REFUSED, 0),
        most_refused=[RefusedClient(label, names.get(label, ""), total) for label, total in top],
        ratelimit_refusals=totals.get(hourly.RATELIMIT_REFUSED, 0),
    )
