"""The files docs/operating.md ships for Prometheus and Grafana: the alert rules pass Prometheus's
own `promtool check rules`, and every series the rules and the dashboard query is one /metrics
serves, with a sample, from the start: on a gunicorn server under config/gunicorn.py that has
served nothing yet (a renamed metric would leave an alert that never fires; a series born at its
first event leaves a panel with "No data" and a rate() with nothing before the first outage)."""

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
import requests
from django.conf import settings
from django.db import connection
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from operations import access, metrics
from plumbing.observe import METADATA_DOCUMENT_OUTCOMES
from signing.keys import signing_key_create
from tests.integration.server import PROJECT_ROOT, database_url, running_server, server_environment

RULES = PROJECT_ROOT / "docs" / "prometheus-rules.yml"
DASHBOARD = PROJECT_ROOT / "docs" / "grafana-dashboard.json"
METRIC = re.compile(r"\boauth_[a-z_]+")


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is not installed (apt-get install prometheus; .ci/run does)")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return found


def test_the_alert_rules_pass_promtool():
    result = subprocess.run([_promtool(), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 6 rules found" in result.stdout


def test_promtool_refuses_a_broken_rule(tmp_path):
    broken = tmp_path / "rules.yml"
    broken.write_text(RULES.read_text().replace("> 86400", "> > 86400"))
    assert subprocess.run([_promtool(), "check", "rules", str(broken)], capture_output=True).returncode != 0


def queried() -> set[str]:
    """Every series name the alert rules and the dashboard's panels query."""
    queries = RULES.read_text() + " ".join(
        target["expr"] for panel in json.loads(DASHBOARD.read_text())["panels"] for target in panel["targets"]
    )
    return set(METRIC.findall(queries))


@pytest.fixture(scope="module")
def sqlite_database(tmp_path_factory) -> str:
    """On a SQLite run: a migrated database file with a signing key (the server cannot share the
    suite's in-memory one)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('metrics') / 'db.sqlite3'}"
    env = server_environment(url, OAUTH_SIGNING_KEY_ENCRYPTION_KEY=settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY)
    for command in (["migrate", "--noinput", "-v", "0"], ["signingkey", "create", "--alg", "ES256"]):
        subprocess.run(
            [sys.executable, "manage.py", *command], cwd=PROJECT_ROOT, env=env, check=True, capture_output=True
        )
    return url


@pytest.fixture
def served_nothing(request, tmp_path, django_db_blocker) -> Iterator[str]:
    """A scrape of a gunicorn server under config/gunicorn.py (the production settings, several workers)
    that has served no request, on this run's database with a signing key (the scrape-time gauges
    of each key). Parametrized: as docs/deploying.md runs it, and with --preload."""
    with django_db_blocker.unblock():
        vendor = connection.vendor
    if vendor == "postgresql":  # the test's database, committed (transaction=True) for the server to see
        signing_key_create(algorithm="ES256")
        url = database_url(connection.settings_dict)
    else:
        url = request.getfixturevalue("sqlite_database")
    with running_server(
        url,
        workers=2,
        preload=request.param,
        probe="/healthz",
        extra_args=("-c", "config/gunicorn.py"),
        env={
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
            # The suite's, which made the keys (here or in sqlite_database).
            "OAUTH_SIGNING_KEY_ENCRYPTION_KEY": settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY,
        },
    ) as server:
        scrape = requests.get(server.url + "/metrics", timeout=10)
        assert scrape.status_code == 200, server.log_tail()
        yield scrape.text


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("served_nothing", [False, True], ids=["as-deployed", "preload"], indirect=True)
def test_every_series_the_rules_and_the_dashboard_query_is_served_at_zero_before_any_request(served_nothing):
    families = list(text_string_to_metric_families(served_nothing))
    # A family without a sample is a panel with "No data" and a rate() with nothing before it.
    assert [family.name for family in families if not family.samples] == []
    samples = [sample for family in families for sample in family.samples]
    asked = queried()
    assert len(asked) >= 14  # positive control: the queries were read
    assert asked - {sample.name for sample in samples} == set()
    # It has served nothing: every counter is still at zero.
    counted = [sample for sample in samples if sample.name.endswith(("_total", "_count"))]
    assert counted and {sample.value for sample in counted} == {0.0}

    def values(name: str, label: str) -> set[str]:
        return {sample.labels[label] for sample in samples if sample.name == name}

    assert values("oauth_ratelimit_refusals_total", "limit") == set(settings.RATELIMITS)
    assert values("oauth_token_requests_total", "grant_type") == set(access.GRANT_TYPE_LABELS)
    assert values("oauth_token_requests_total", "outcome") == set(access.TOKEN_OUTCOMES)
    assert values("oauth_request_duration_seconds_count", "endpoint") == set(metrics.TIMED_ENDPOINTS)
    assert values("oauth_consent_decisions_total", "decision") == {"allowed", "denied"}
    assert values("oauth_database_unavailable_total", "error") == {"OperationalError", "InterfaceError"}
    assert values("oauth_metadata_document_fetches_total", "outcome") == set(METADATA_DOCUMENT_OUTCOMES)
    assert values("oauth_http_responses_total", "code") == {"500", "503"}
    assert "status_list" in values("oauth_http_responses_total", "endpoint")


def test_the_metadata_document_outcomes_declared_are_those_sent():
    fetcher = PROJECT_ROOT / "oauthflows" / "registration" / "cimd.py"
    sent = set(re.findall(r'outcome = "(\w+)"|outcome="(\w+)"', fetcher.read_text()))
    assert {name for pair in sent for name in pair if name} == set(METADATA_DOCUMENT_OUTCOMES)


def test_a_scrape_passes_promtool_check_metrics(db):
    scrape = Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content
    result = subprocess.run([_promtool(), "check", "metrics"], input=scrape, capture_output=True)
    assert result.returncode == 0, result.stdout + result.stderr
