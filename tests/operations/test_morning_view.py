"""The admin index's morning view (operations.selectors.morning_view_get): the last 24 hours from
shared data (the review queue, the audit trail, the hourly counts every process writes), never
from one process's counters."""

from urllib.parse import urlencode

import pytest
from bs4 import BeautifulSoup
from django.test import Client
from django.urls import reverse

from oauthclients.models import OAuthClient
from oauthclients.services import client_self_register
from operations import hourly
from operations.models import HourlyCount
from tests.factories import make_client

SOURCE = OAuthClient.RegistrationSource.DCR


@pytest.fixture(autouse=True)
def _nothing_pending():
    hourly.forget()
    yield
    hourly.forget()


@pytest.fixture
def staff(reviewer):
    browser = Client()
    browser.force_login(reviewer)
    return browser


def _rows(page) -> dict[str, str]:
    return {
        row.th.get_text(strip=True): row.td.get_text(" ", strip=True)
        for row in page.select(".morning-view table:not(.most-refused) tr")
    }


def _token(client_id, secret, remote_addr="192.0.2.10"):
    return Client().post(
        "/v2/auth/oauth2/token",
        urlencode({"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}),
        content_type="application/x-www-form-urlencoded",
        REMOTE_ADDR=remote_addr,
    )


def test_it_shows_the_last_24_hours(staff, owner, settings):
    make_client(owner, name="Waiting")
    app = make_client(owner, name="Refused App", approve=True)
    for _ in range(3):
        _token(app.client.client_id, "wrong-secret")
    _token("no-such-client", "x")
    _token("no-such-client", "x")
    settings.RATELIMITS = {**settings.RATELIMITS, "token_requests_per_address": (1, 60)}
    _token("no-such-client", "x", remote_addr="192.0.2.99")
    _token("no-such-client", "x", remote_addr="192.0.2.99")
    # Another process's counts of an hour ago, and of two days ago (outside the window).
    HourlyCount.objects.create(hour=hourly.current_hour() - 1, name=hourly.TOKENS_ISSUED, count=40)
    HourlyCount.objects.create(hour=hourly.current_hour() - 30, name=hourly.TOKENS_ISSUED, count=1000)

    page = BeautifulSoup(staff.get(reverse("admin:index")).content, "html.parser")
    rows = _rows(page)
    assert rows["Clients waiting for review"].startswith("1 (the oldest for 0")
    assert rows["Tokens issued"] == "40"
    assert rows["Token requests refused"] == "7"
    assert rows["Rate-limit refusals"] == "1"
    most = [[cell.get_text(strip=True) for cell in row.select("td")] for row in page.select(".most-refused tbody tr")]
    assert most == [["no-such-client", "(no such client)", "4"], [app.client.client_id, "Refused App", "3"]]


def test_self_registrations_come_from_the_audit_trail(staff):
    page = BeautifulSoup(staff.get(reverse("admin:index")).content, "html.parser")
    assert _rows(page)["Self-registrations"] == "0"
    client_self_register(
        name="Agent", redirect_uris=["http://127.0.0.1:7777/cb"], scopes=["PROFILE_READ"], kind="public", source=SOURCE
    )
    page = BeautifulSoup(staff.get(reverse("admin:index")).content, "html.parser")
    assert _rows(page)["Self-registrations"] == "1"


def test_counts_from_every_process_add_up(db):
    hourly.count(hourly.TOKENS_ISSUED)
    hourly.count(hourly.TOKENS_ISSUED)
    hourly.flush()
    hourly.count(hourly.TOKENS_ISSUED)  # a second flush adds to the same row
    hourly.flush()
    (row,) = HourlyCount.objects.filter(name=hourly.TOKENS_ISSUED)
    assert row.count == 3 and row.hour == hourly.current_hour()


def test_a_process_writes_after_a_response_at_most_every_few_seconds(
    db, settings, django_assert_num_queries, monkeypatch
):
    # One flush in SWEEP_ONE_IN also deletes old hours (a second statement; the next test): not this one.
    monkeypatch.setattr(hourly.random, "randrange", lambda n: 1)
    settings.OPERATIONS_HOURLY_FLUSH_SECONDS = 10
    hourly.flush()
    with django_assert_num_queries(0):
        Client().get("/v2/scopes")  # counted nothing, and flushed a moment ago: nothing to write
    hourly.count(hourly.TOKENS_ISSUED)
    hourly._flushed_at -= 10
    with django_assert_num_queries(1):
        Client().get("/v2/scopes")  # the write comes with request_finished, after the response
    assert HourlyCount.objects.get(name=hourly.TOKENS_ISSUED).count == 1


def test_now_and_then_a_flush_deletes_the_hours_past_keeping(db, monkeypatch, django_assert_num_queries):
    now = hourly.current_hour()
    HourlyCount.objects.create(hour=now - hourly.KEPT_HOURS - 1, name=hourly.TOKENS_ISSUED, label="", count=5)
    HourlyCount.objects.create(hour=now - hourly.KEPT_HOURS, name=hourly.TOKENS_ISSUED, label="", count=6)
    monkeypatch.setattr(hourly.random, "randrange", lambda n: 1)  # not this time
    hourly.count(hourly.TOKENS_ISSUED)
    hourly.flush()
    assert HourlyCount.objects.filter(hour__lt=now - hourly.KEPT_HOURS).exists()
    monkeypatch.setattr(hourly.random, "randrange", lambda n: 0)  # the one flush in SWEEP_ONE_IN
    hourly.count(hourly.TOKENS_ISSUED)
    with django_assert_num_queries(2):
        hourly.flush()
    assert sorted(HourlyCount.objects.values_list("hour", flat=True)) == [now - hourly.KEPT_HOURS, now]


def test_made_up_client_ids_cannot_grow_the_table_without_bound(db):
    for n in range(hourly.MAX_LABELS_PER_FLUSH + 50):
        hourly.count(hourly.REFUSALS_BY_CLIENT, f"guess-{n}")
    hourly.flush()
    rows = HourlyCount.objects.filter(name=hourly.REFUSALS_BY_CLIENT)
    assert rows.count() == hourly.MAX_LABELS_PER_FLUSH + 1
    assert rows.get(label=hourly.OTHERS).count == 50
