"""The files docs/operating.md ships for Prometheus and Grafana: the alert rules pass Prometheus's
own `promtool check rules`, and every metric the rules and the dashboard query is one /metrics
serves (a renamed metric would leave an alert that never fires)."""

import json
import os
import re
import shutil
import subprocess

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from signing.keys import signing_key_create
from tests.integration.server import PROJECT_ROOT

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


@pytest.mark.django_db
def test_every_metric_the_rules_and_the_dashboard_query_is_served():
    signing_key_create(algorithm="ES256")
    scrape = Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    served = set()
    for family in text_string_to_metric_families(scrape):
        served |= {family.name, *(sample.name for sample in family.samples)}
    queries = RULES.read_text() + " ".join(
        target["expr"] for panel in json.loads(DASHBOARD.read_text())["panels"] for target in panel["targets"]
    )
    asked = set(METRIC.findall(queries))
    assert len(asked) >= 12  # positive control: the queries were read
    # A labelled counter or histogram with no sample yet is served by its family name only.
    unknown = {
        name for name in asked if name not in served and re.sub(r"_(total|bucket|count|sum)$", "", name) not in served
    }
    assert unknown == set()


def test_a_scrape_passes_promtool_check_metrics(db):
    scrape = Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content
    result = subprocess.run([_promtool(), "check", "metrics"], input=scrape, capture_output=True)
    assert result.returncode == 0, result.stdout + result.stderr
