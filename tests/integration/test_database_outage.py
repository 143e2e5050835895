"""PostgreSQL stops and starts again while requests flow: 503s during the outage, recovery without
restarting gunicorn, and nothing half-written.

The outage is real: a private PostgreSQL cluster (tests/integration/pgcluster.py), migrated with
`manage.py migrate` and seeded with `manage.py seed_demo`, is stopped with `pg_ctl stop -m fast`
under a gunicorn with four workers and persistent connections (CONN_MAX_AGE=60, health checks on),
then started again. The shared PostgreSQL server is never touched.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace

import psycopg
import pytest
import requests

from tests.integration.flows import authorize, exchange, login, me, refresh
from tests.integration.pgcluster import ClusterUnavailable, private_cluster
from tests.integration.server import PROJECT_ROOT, print_log, running_server, server_environment

pytestmark = [pytest.mark.postgres_only]

HEALTHY_SECONDS = 1.5
OUTAGE_SECONDS = 3
RECOVERY_SECONDS = 10
ME_THREADS = 2
SERVICE_UNAVAILABLE = {
    "status": "error",
    "error": {
        "code": "service_unavailable",
        "message": "The service is temporarily unavailable. Try again in a few seconds.",
    },
}


@dataclass
class Outcome:
    kind: str
    started: float
    ended: float
    status: int | str
    body: str
    retry_after: str | None


def manage(database_url: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_ROOT,
        env=server_environment(database_url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture
def cluster(_postgres_only_guard):
    try:
        with private_cluster() as cluster:
            yield cluster
    except ClusterUnavailable as exc:
        if os.environ.get("REQUIRE_POSTGRES") == "1":
            pytest.fail(f"cannot create a private PostgreSQL cluster: {exc}")
        pytest.skip(f"cannot create a private PostgreSQL cluster: {exc}")


class Traffic:
    """Threads calling /v2/me and refreshing a token in a loop, recording every outcome."""

    def __init__(self, base_url: str, server_app, me_token: str, refresh_token: str):
        self.base_url, self.app = base_url, server_app
        self.me_token, self.refresh_token = me_token, refresh_token
        self.outcomes: list[Outcome] = []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        kinds = ["me"] * ME_THREADS
        # One refresher only: two refreshing one token would race each other, which is another
        # test's business (test_exactly_once.py).
        kinds.append("refresh")
        self.threads = [threading.Thread(target=self._loop, args=(kind,), daemon=True) for kind in kinds]

    def _call(self, kind: str) -> requests.Response:
        if kind == "me":
            return me(self.base_url, self.me_token)
        response = refresh(self.base_url, self.app.client_id, self.app.secret, self.refresh_token)
        if response.status_code == 200:
            self.refresh_token = response.json()["refresh_token"]
        return response

    def _loop(self, kind: str) -> None:
        while not self.stopped.is_set():
            started = time.monotonic()
            try:
                response = self._call(kind)
                status, body, retry_after = response.status_code, response.text, response.headers.get("Retry-After")
            except requests.RequestException as exc:
                status, body, retry_after = type(exc).__name__, str(exc), None
            with self.lock:
                self.outcomes.append(Outcome(kind, started, time.monotonic(), status, body, retry_after))
            time.sleep(0.02)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        for thread in self.threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in self.threads), "a request never finished"

    def since(self, moment: float) -> list[Outcome]:
        with self.lock:
            return [o for o in self.outcomes if o.started >= moment]

    def wait_for_success(self, since: float, timeout: float) -> float | None:
        """When both kinds of request have succeeded after `since` (their end time), or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ok = [o for o in self.since(since) if o.status == 200]
            if {o.kind for o in ok} == {"me", "refresh"}:
                return max(min(o.ended for o in ok if o.kind == kind) for kind in ("me", "refresh"))
            time.sleep(0.05)
        return None


def half_written(database_url: str) -> dict[str, int]:
    """Counts of rows that only a half-finished exchange or rotation could leave; all must be 0."""
    checks = {
        "live refresh token without access token": "SELECT count(*) FROM oauthclients_refreshtoken"
        " WHERE revoked IS NULL AND access_token_id IS NULL",
        "access token without refresh token": "SELECT count(*) FROM oauthclients_accesstoken a WHERE NOT EXISTS"
        " (SELECT 1 FROM oauthclients_refreshtoken r WHERE r.access_token_id = a.id)",
        "used grant without family": "SELECT count(*) FROM oauthclients_grant WHERE used_at IS NOT NULL"
        " AND token_family IS NULL",
        "used grant whose family has no token": "SELECT count(*) FROM oauthclients_grant g WHERE used_at IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM oauthclients_refreshtoken r WHERE r.token_family = g.token_family)",
        "family with more than one live refresh token": "SELECT count(*) FROM (SELECT token_family"
        " FROM oauthclients_refreshtoken WHERE revoked IS NULL GROUP BY token_family HAVING count(*) > 1) f",
    }
    with psycopg.connect(database_url) as conn:
        return {name: conn.execute(sql).fetchone()[0] for name, sql in checks.items()}


def test_a_database_restart_gives_503s_then_recovers_by_itself(cluster):
    url = cluster.create_database("outage")
    manage(url, "migrate", "--noinput")
    seeded = manage(url, "seed_demo", "--force")
    app = SimpleNamespace(
        client_id=re.search(r"Demo client_id:\s+(\S+)", seeded).group(1),
        secret=re.search(r"Demo client_secret:\s+(\S+)", seeded).group(1),
        redirect_uri_list=["http://localhost:8765/callback"],
    )

    with running_server(url, workers=4) as server:
        try:
            browser = login(server.url, "enduser", "enduser-demo-password")
            reader = exchange(server.url, app, app.secret, authorize(browser, server.url, app)).json()
            refresher = exchange(server.url, app, app.secret, authorize(browser, server.url, app)).json()

            workers = sorted(server.worker_pids())

            with Traffic(server.url, app, reader["access_token"], refresher["refresh_token"]) as traffic:
                time.sleep(HEALTHY_SECONDS)
                stopping = time.monotonic()
                cluster.stop("fast")
                down = time.monotonic()
                page = browser.get(server.url + "/settings/developer/", timeout=15)
                not_ready = requests.get(server.url + "/readyz", timeout=15)
                time.sleep(OUTAGE_SECONDS)
                restarting = time.monotonic()
                cluster.start()
                up = time.monotonic()
                recovered = traffic.wait_for_success(since=up, timeout=RECOVERY_SECONDS)
                time.sleep(0.5)
                ready_again = requests.get(server.url + "/readyz", timeout=15)

            outcomes = traffic.outcomes
            before = [o for o in outcomes if o.ended < stopping]
            during = [o for o in outcomes if o.started >= down and o.ended < restarting]
            after = [o for o in outcomes if o.started >= up]
            print(
                f"{len(outcomes)} requests: {len(before)} before the outage, {len(during)} during it "
                f"(statuses {sorted({o.status for o in during}, key=str)}), {len(after)} after the restart; "
                f"recovered {None if recovered is None else round(recovered - up, 2)} s after PostgreSQL was back"
            )

            # Only 200 or a clean 503 ever: no 500, no dropped connection, no trace in any body.
            assert {o.status for o in outcomes} <= {200, 503}, {(o.kind, o.status, o.body[:200]) for o in outcomes}
            assert all(o.status == 200 for o in before)
            assert {o.kind for o in during} == {"me", "refresh"}
            assert all(o.status == 503 for o in during), [(o.kind, o.status) for o in during]
            for outcome in outcomes:
                if outcome.status == 503:
                    assert outcome.retry_after == "5"
                    assert "Traceback" not in outcome.body and 'File "' not in outcome.body
                    assert json.loads(outcome.body) == SERVICE_UNAVAILABLE

            # A page outside the API is a 503 page, with the same Retry-After.
            assert page.status_code == 503 and page.headers["Content-Type"].startswith("text/html")
            assert page.headers["Retry-After"] == "5" and "Traceback" not in page.text
            assert "Temporarily unavailable" in page.text

            # Readiness says so, naming the database and nothing of its connection string.
            assert not_ready.status_code == 503 and not_ready.headers["Cache-Control"] == "no-store"
            assert not_ready.json()["checks"]["database"].startswith("unavailable (")
            assert url.rsplit("/", 1)[-1] not in not_ready.text
            assert ready_again.status_code == 200, ready_again.text

            # Back by itself: the same workers (none restarted), their dead connections replaced.
            assert sorted(server.worker_pids()) == workers
            assert recovered is not None, "no request succeeded after PostgreSQL came back"
            assert recovered - up < 5
            assert all(o.status == 200 for o in after), [(o.kind, o.status) for o in after]
            assert me(server.url, reader["access_token"]).status_code == 200
            assert refresh(server.url, app.client_id, app.secret, traffic.refresh_token).status_code == 200
        except BaseException:
            print_log(server)
            print(f"\n--- postgres log ---\n{cluster.log_tail()}")
            raise

    leftovers = half_written(url)
    assert leftovers == dict.fromkeys(leftovers, 0)
