"""/metrics (operations/metrics.py): reachable from METRICS_NETWORKS by the socket's peer or with
METRICS_TOKEN, nowhere else; each metric counts what it says; no credential, client_id or user id
in what is scraped."""

from urllib.parse import urlencode

import pytest
from django.db import OperationalError
from django.test import Client
from oauth2_provider import cimd as dot_cimd
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from oauthflows.registration import cimd
from plumbing.dbfailure import DatabaseUnavailableMiddleware
from signing.keys import signing_key_create
from signing.models import StatusList
from signing.statuslist import status_list_token
from tests.factories import PASSWORD, make_client, make_user
from tests.oauthflows.helpers import authorize_url, exchange, get_code

OUTSIDE = "203.0.113.9"


def value(name, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def scrape(**headers):
    return Client().get("/metrics", **{"REMOTE_ADDR": "127.0.0.1", **headers})


def samples(text: str) -> dict:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@pytest.mark.django_db
def test_a_scraper_on_loopback_reads_them(app):
    response = scrape()
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert response["Cache-Control"] == "no-store"
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert {"oauth_clients_awaiting_review", "oauth_client_review_oldest_age_seconds"} <= names


@pytest.mark.django_db
def test_outside_the_networks_it_is_not_there(settings):
    settings.METRICS_TOKEN = "metrics-token-of-its-own-0123456789"
    assert scrape(REMOTE_ADDR=OUTSIDE).status_code == 404
    assert scrape(REMOTE_ADDR=OUTSIDE, HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 404
    assert scrape(REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION="Bearer wrong").status_code == 404
    assert scrape(REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION=f"Bearer {settings.METRICS_TOKEN}").status_code == 200


@pytest.mark.django_db
def test_no_token_opens_nothing_when_none_is_set(settings):
    settings.METRICS_TOKEN = ""
    assert scrape(REMOTE_ADDR=OUTSIDE, HTTP_AUTHORIZATION="Bearer ").status_code == 404


@pytest.mark.django_db
def test_a_configured_network(settings):
    settings.METRICS_NETWORKS = ["10.9.0.0/16"]
    assert scrape(REMOTE_ADDR="10.9.1.1").status_code == 200
    assert scrape(REMOTE_ADDR="127.0.0.1").status_code == 404


@pytest.mark.django_db
def test_token_requests_by_grant_type_and_outcome_and_latency(app):
    client, secret = app
    labels = {"grant_type": "authorization_code", "outcome": "invalid_grant"}
    before, timed = (
        value("oauth_token_requests_total", **labels),
        value("oauth_request_duration_seconds_count", endpoint="token"),
    )
    body = {"grant_type": "authorization_code", "code": "nope", "redirect_uri": "https://app.example.com/cb"}
    Client().post(
        "/v2/auth/oauth2/token",
        urlencode({**body, "client_id": client.client_id, "client_secret": secret}),
        content_type="application/x-www-form-urlencoded",
    )
    assert value("oauth_token_requests_total", **labels) == before + 1
    assert value("oauth_request_duration_seconds_count", endpoint="token") == timed + 1

    user = make_user("reader")
    browser = Client()
    assert browser.login(username=user.username, password=PASSWORD)
    allowed = value("oauth_consent_decisions_total", decision="allowed")
    issued = value("oauth_token_requests_total", grant_type="authorization_code", outcome="issued")
    code = get_code(browser, client)
    tokens = exchange(Client(), client, code, secret=secret).json()
    assert value("oauth_consent_decisions_total", decision="allowed") == allowed + 1
    assert value("oauth_token_requests_total", grant_type="authorization_code", outcome="issued") == issued + 1
    denied = value("oauth_consent_decisions_total", decision="denied")
    browser.get(authorize_url(client) + "&prompt=consent")
    browser.post(authorize_url(client).replace("authorize?", "authorize/deny?") + "&prompt=consent")
    assert value("oauth_consent_decisions_total", decision="denied") == denied + 1

    text = scrape().content.decode()
    for credential in (secret, code, tokens["access_token"], tokens["refresh_token"]):
        assert credential not in text
    assert client.client_id not in text  # no client_id label: unbounded
    assert f'user_id="{user.pk}"' not in text and "user" not in {
        label for family in text_string_to_metric_families(text) for s in family.samples for label in s.labels
    }


@pytest.mark.django_db
def test_rate_limit_refusals_by_limit(app, settings):
    settings.RATELIMITS = {**settings.RATELIMITS, "token_requests_per_address": (1, 60)}
    before = value("oauth_ratelimit_refusals_total", limit="token_requests_per_address")
    refused_before = value("oauth_token_requests_total", grant_type="client_credentials", outcome="rate_limited")
    for _ in range(3):
        Client().post(
            "/v2/auth/oauth2/token",
            urlencode({"grant_type": "client_credentials"}),
            content_type="application/x-www-form-urlencoded",
            REMOTE_ADDR="198.51.100.77",
        )
    assert value("oauth_ratelimit_refusals_total", limit="token_requests_per_address") == before + 2
    assert value("oauth_token_requests_total", grant_type="client_credentials", outcome="rate_limited") == (
        refused_before + 2
    )


@pytest.mark.django_db
def test_database_unavailable_and_503s():
    before = value("oauth_database_unavailable_total", error="OperationalError")
    DatabaseUnavailableMiddleware(lambda r: None).process_exception(_request(), OperationalError("down"))
    assert value("oauth_database_unavailable_total", error="OperationalError") == before + 1


def _request():
    from django.test import RequestFactory

    return RequestFactory().get("/v2/me")


@pytest.mark.django_db
def test_review_queue_and_its_oldest_age_computed_at_scrape_time():
    owner = make_user("dev")
    make_client(owner, name="Waiting One")
    found = samples(scrape().content.decode())
    assert found[("oauth_clients_awaiting_review", ())] == 1
    assert found[("oauth_client_review_oldest_age_seconds", ())] >= 0
    make_client(owner, name="Approved One", approve=True)
    assert samples(scrape().content.decode())[("oauth_clients_awaiting_review", ())] == 1


@pytest.mark.django_db
def test_signing_keys_age_and_time_to_rotation(settings):
    settings.OAUTH_SIGNING_KEY_ROTATION_DAYS = 30
    key = signing_key_create(algorithm="ES256")
    found = samples(scrape().content.decode())
    labels = (("algorithm", "ES256"), ("kid", key.kid))
    assert 0 <= found[("oauth_signing_key_age_seconds", labels)] < 60
    assert 30 * 86400 - 60 < found[("oauth_signing_key_rotation_due_seconds", labels)] <= 30 * 86400


@pytest.mark.django_db
def test_status_list_builds():
    signing_key_create(algorithm="ES256")
    StatusList.objects.create(number=0, size=256)
    before = value("oauth_status_list_builds_total")
    assert status_list_token(0)
    assert value("oauth_status_list_builds_total") == before + 1
    assert value("oauth_status_list_last_build_timestamp_seconds") > 0


@pytest.mark.django_db
def test_metadata_document_fetches_by_outcome_and_in_flight(monkeypatch):
    seen = []

    def refuse(self, client_id):
        seen.append(value("oauth_metadata_document_fetches_in_flight"))
        raise dot_cimd.CIMDError("not https")

    monkeypatch.setattr(dot_cimd, "_registration_permitted", lambda request, client_id: True)
    monkeypatch.setattr(cimd.MetadataFetcher, "fetch", refuse)
    before = value("oauth_metadata_document_fetches_total", outcome="refused")
    in_flight = value("oauth_metadata_document_fetches_in_flight")
    with pytest.raises(cimd.MetadataDocumentError):
        cimd._fetch("https://agent.example/metrics-test-client.json")
    assert seen == [in_flight + 1]
    assert value("oauth_metadata_document_fetches_in_flight") == in_flight
    assert value("oauth_metadata_document_fetches_total", outcome="refused") == before + 1
    backoff = value("oauth_metadata_document_fetches_total", outcome="backoff")
    with pytest.raises(cimd.MetadataDocumentError):
        cimd._fetch("https://agent.example/metrics-test-client.json")
    assert value("oauth_metadata_document_fetches_total", outcome="backoff") == backoff + 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "relayed",
    [
        {"HTTP_X_FORWARDED_FOR": OUTSIDE},
        {"HTTP_X_FORWARDED_PROTO": "https"},
        {"HTTP_FORWARDED": f"for={OUTSIDE}"},
        {"HTTP_X_REAL_IP": OUTSIDE},
        {"HTTP_X_FORWARDED_HOST": "auth.example.com"},
    ],
)
def test_a_stranger_relayed_by_a_proxy_on_loopback_is_not_the_scraper(relayed, settings):
    # nginx or HAProxy on the same host: every public request's peer is loopback; the proxy's
    # forwarding headers say it relayed it. Only its own bearer token opens the door then.
    settings.METRICS_TOKEN = "metrics-token-of-its-own-0123456789"
    assert scrape(**relayed).status_code == 404
    assert scrape(**relayed, HTTP_AUTHORIZATION=f"Bearer {settings.METRICS_TOKEN}").status_code == 200
    assert scrape().status_code == 200  # the scraper beside the server sends none of them
