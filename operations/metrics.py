"""Prometheus metrics (docs/operating.md, "Metrics"), with prometheus-client.

Why prometheus-client and not django-prometheus: django-prometheus counts every request, view and
model save through middlewares and database engine wrappers of its own (ours is
plumbing.postgresql, which it cannot wrap), labels by view, and knows nothing of grants, consent or
review queues; what an operator of this server needs is a dozen domain metrics, counted where they
happen at the cost of a memory write.

Counting is cheap by construction: a counter or histogram update is a write to this process's
memory (one mmap'd file per process under gunicorn, prometheus-client's multiprocess mode, set up
by config/gunicorn.py), never a database statement. Gauges that need the database (the review
queue, self-registrations, signing keys) are computed when Prometheus scrapes, by ScrapeCollector.

Labels come from fixed sets (grant types, RFC 6749 error codes, limit names, status codes,
endpoint names) or are public key ids: no user id, no client_id, no secret.
"""

import hmac
import logging
import os
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Min, Q
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

from oauthclients.models import AuditAction, ClientAuditEvent, ClientStatus, OAuthClient
from operations import access
from operations.networks import peer_in
from plumbing.errors import DATABASE_UNAVAILABLE as DATABASE_ERRORS
from plumbing.observe import METADATA_DOCUMENT_OUTCOMES
from scopes.bearer import MalformedBearer, request_bearer_token
from signing.models import SigningKey

logger = logging.getLogger(__name__)

TOKEN_REQUESTS = Counter(
    "oauth_token_requests",
    "Token endpoint requests by grant type and outcome (issued, or the error).",
    ["grant_type", "outcome"],
)
REQUEST_DURATION = Histogram(
    "oauth_request_duration_seconds",
    "Time to answer, by endpoint (token, authorize, introspect).",
    ["endpoint"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
TIMED_ENDPOINTS = frozenset({"token", "authorize", "introspect"})
CONSENT_DECISIONS = Counter("oauth_consent_decisions", "Consent pages answered, by decision.", ["decision"])
RATELIMIT_REFUSALS = Counter("oauth_ratelimit_refusals", "Requests refused by a rate limit (429).", ["limit"])
HTTP_RESPONSES = Counter(
    "oauth_http_responses",
    "Responses by endpoint (operations.access; other: any other path) and status code.",
    ["endpoint", "code"],
)
DATABASE_UNAVAILABLE = Counter(
    "oauth_database_unavailable", "Requests answered 503 because the database could not be reached.", ["error"]
)
METADATA_FETCHES = Counter(
    "oauth_metadata_document_fetches", "Client ID metadata document fetches, by outcome.", ["outcome"]
)
METADATA_IN_FLIGHT = Gauge(
    "oauth_metadata_document_fetches_in_flight",
    "Client ID metadata documents being fetched now.",
    multiprocess_mode="livesum",
)
STATUS_LIST_BUILDS = Counter("oauth_status_list_builds", "Token status lists signed (again).")
STATUS_LIST_LAST_BUILD = Gauge(
    "oauth_status_list_last_build_timestamp_seconds",
    "When a token status list was last signed (Unix time).",
    multiprocess_mode="max",
)


# The codes each endpoint's answers are declared with at zero: the 5xx the alert rules watch.
DECLARED_CODES = ("500", "503")
CONSENT_DECISION_LABELS = ("allowed", "denied")


def series_declare() -> None:
    """Every labelled series the shipped alert rules and dashboard query, at zero from start-up
    (docs/prometheus-rules.yml, docs/grafana-dashboard.json): a panel shows 0 rather than "No data",
    and rate() has a sample before the first event (the first outage, the first 429). The label
    values are the fixed sets the counters take; the limits are settings.RATELIMITS' names, so a
    limit added there is declared too.

    Run by OperationsConfig.ready in each process that loads the application, and again in each
    gunicorn worker forked from a master that loaded it (--preload; config/gunicorn.py post_fork):
    inc(0) writes every series, these and any other this process knows, to the worker's own file."""
    for grant_type in access.GRANT_TYPE_LABELS:
        for outcome in access.TOKEN_OUTCOMES:
            TOKEN_REQUESTS.labels(grant_type, outcome).inc(0)
    for endpoint in TIMED_ENDPOINTS:
        REQUEST_DURATION.labels(endpoint)
    for endpoint in access.endpoint_names():
        for code in DECLARED_CODES:
            HTTP_RESPONSES.labels(endpoint, code).inc(0)
    for decision in CONSENT_DECISION_LABELS:
        CONSENT_DECISIONS.labels(decision).inc(0)
    for limit in settings.RATELIMITS:
        RATELIMIT_REFUSALS.labels(limit).inc(0)
    for error in DATABASE_ERRORS:
        DATABASE_UNAVAILABLE.labels(error.__name__).inc(0)
    for outcome in METADATA_DOCUMENT_OUTCOMES:
        METADATA_FETCHES.labels(outcome).inc(0)


def request_observed(endpoint: str | None, *, status: int, latency: float, grant_type=None, outcome=None) -> None:
    """The middleware's per-request update: a few memory writes."""
    HTTP_RESPONSES.labels(endpoint or "other", str(status)).inc()
    if endpoint is None:
        return
    if endpoint in TIMED_ENDPOINTS:
        REQUEST_DURATION.labels(endpoint).observe(latency)
    if outcome is not None:
        TOKEN_REQUESTS.labels(grant_type or "none", outcome).inc()
    elif endpoint in ("consent_allow", "consent_deny") and 300 <= status < 400:
        # A redirect back to the app is a decision recorded; a 4xx is a refused form.
        CONSENT_DECISIONS.labels("allowed" if endpoint == "consent_allow" else "denied").inc()


class ScrapeCollector:
    """Gauges read from the database when Prometheus scrapes (every 15-60 s), never per request."""

    def collect(self):
        try:
            yield from self._review_queue()
            yield from self._signing_keys()
        except DatabaseError as exc:
            logger.warning("Metrics: database gauges skipped (%s)", type(exc).__name__)

    @staticmethod
    def _review_queue():
        now = timezone.now()
        queue = OAuthClient.objects.filter(status=ClientStatus.PENDING).aggregate(
            count=Count("id"), oldest=Min("created")
        )
        yield GaugeMetricFamily(
            "oauth_clients_awaiting_review", "Clients waiting for an administrator's review.", value=queue["count"]
        )
        oldest = (now - queue["oldest"]).total_seconds() if queue["oldest"] else 0
        yield GaugeMetricFamily(
            "oauth_client_review_oldest_age_seconds",
            "How long the oldest client waiting for review has waited (0: none waits).",
            value=oldest,
        )
        registered = ClientAuditEvent.objects.filter(
            action=AuditAction.CLIENT_SELF_REGISTERED, created__gte=now - timedelta(hours=1)
        ).count()
        yield GaugeMetricFamily(
            "oauth_self_registrations_last_hour",
            "Clients that registered themselves in the last hour.",
            value=registered,
        )

    @staticmethod
    def _signing_keys():
        now = timezone.now()
        rotation = timedelta(days=settings.OAUTH_SIGNING_KEY_ROTATION_DAYS)
        age = GaugeMetricFamily(
            "oauth_signing_key_age_seconds", "Age of each signing key that signs now.", labels=["kid", "algorithm"]
        )
        due = GaugeMetricFamily(
            "oauth_signing_key_rotation_due_seconds",
            "Time until each signing key is due for rotation (OAUTH_SIGNING_KEY_ROTATION_DAYS after it began "
            "signing); negative: overdue.",
            labels=["kid", "algorithm"],
        )
        signing = SigningKey.objects.filter(signs_from__lte=now).filter(
            Q(retired_at__isnull=True) | Q(retired_at__gt=now)
        )
        for kid, algorithm, signs_from in signing.values_list("kid", "algorithm", "signs_from"):
            age.add_metric([kid, algorithm], (now - signs_from).total_seconds())
            due.add_metric([kid, algorithm], (signs_from + rotation - now).total_seconds())
        yield age
        yield due


_scrape_collector = ScrapeCollector()
_registered_in_default = False


def _registry():
    global _registered_in_default
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        registry.register(_scrape_collector)
        return registry
    if not _registered_in_default:
        REGISTRY.register(_scrape_collector)
        _registered_in_default = True
    return REGISTRY


def metrics_allowed(request: HttpRequest) -> bool:
    """From METRICS_NETWORKS by the socket's peer, or with METRICS_TOKEN as a bearer token."""
    if peer_in(request, settings.METRICS_NETWORKS):
        return True
    token = settings.METRICS_TOKEN
    if not token:
        return False
    try:
        presented = request_bearer_token(request)
    except MalformedBearer:
        return False
    return presented is not None and hmac.compare_digest(presented.encode(), token.encode())


def metrics(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response
