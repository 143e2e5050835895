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
