"""Graceful shutdown under the production gunicorn configuration (config/gunicorn.py): at SIGTERM
/readyz turns 503 at once while requests are still served for GUNICORN_DRAIN_SECONDS, then the
server stops accepting and exits."""

import signal
import time

import pytest
import requests

from tests.integration.server import running_server

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

DRAIN = 2.0


def test_sigterm_drains_readiness_first_then_stops(_postgres_only_guard):
    from django.db import connection

    from tests.integration.server import database_url

    with running_server(
        database_url(connection.settings_dict),
        workers=2,
        env={"GUNICORN_DRAIN_SECONDS": str(DRAIN)},
        extra_args=("-c", "config/gunicorn.py"),
    ) as server:
        assert requests.get(server.url + "/readyz", timeout=5).status_code == 200
        server.process.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        deadline = sent + 1
        while requests.get(server.url + "/readyz", timeout=5).status_code != 503:
            assert time.monotonic() < deadline, "/readyz still 200 a second after SIGTERM"
            time.sleep(0.05)
        draining = requests.get(server.url + "/readyz", timeout=5).json()
        assert draining["status"] == "draining"
        # Still serving everything else during the drain.
        served = [requests.get(server.url + "/healthz", timeout=5).status_code for _ in range(5)]
        metadata = requests.get(server.url + "/.well-known/oauth-authorization-server", timeout=5)
        assert time.monotonic() - sent < DRAIN
        assert served == [200] * 5 and metadata.status_code == 200
        server.process.wait(timeout=DRAIN + 10)
        stopped = time.monotonic() - sent
        assert stopped >= DRAIN, f"stopped {stopped:.2f} s after SIGTERM, before the drain delay"
        with pytest.raises(requests.ConnectionError):
            requests.get(server.url + "/healthz", timeout=2)


def test_metrics_add_up_across_workers_and_pass_promtool(_postgres_only_guard):
    """prometheus-client's multiprocess mode under config/gunicorn.py: one scrape counts every worker."""
    import shutil
    import subprocess

    from django.db import connection
    from prometheus_client.parser import text_string_to_metric_families

    from tests.integration.server import database_url

    with running_server(
        database_url(connection.settings_dict), workers=3, extra_args=("-c", "config/gunicorn.py")
    ) as server:
        for _ in range(9):
            requests.post(
                server.url + "/v2/auth/oauth2/token",
                data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": "nobody", "client_secret": "y"},
                timeout=10,
            )
        pids = set(server.worker_pids())
        scrape = requests.get(server.url + "/metrics", timeout=10)
        assert scrape.status_code == 200
        counted = {
            tuple(sorted(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(scrape.text)
            if family.name == "oauth_token_requests"
            for sample in family.samples
            if sample.name == "oauth_token_requests_total" and sample.value  # the rest declared at zero
        }
        assert counted == {(("grant_type", "refresh_token"), ("outcome", "invalid_client")): 9.0}
        assert len(pids) == 3
        promtool = shutil.which("promtool")
        if promtool is None:
            pytest.skip("promtool is not installed (apt-get install prometheus)")
        checked = subprocess.run([promtool, "check", "metrics"], input=scrape.content, capture_output=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr
