"""Slow client ID metadata documents cannot take the server's workers (issue 28, High 1).

gunicorn with three sync workers on PostgreSQL, production settings (a 5 s deadline per fetch),
OAUTH_CLIENT_METADATA_MAX_FETCHES=1 counted in the database for every worker together. Three
authorizations at once name three documents that a server on loopback drips one byte a second:
one is fetched and given up at the deadline, the other two are refused at once ("try again"); all
three are a 400 page within the bound, no worker is killed, and the metadata endpoint answers
promptly all along. Before the fix each took a worker until gunicorn's WORKER TIMEOUT (a 500).
"""

import threading
import time
from urllib.parse import urlencode

import pytest
import requests
from django.db import connection

from tests.integration.conftest import REPORTS
from tests.integration.server import database_url, print_log, running_server
from tests.oauthflows.helpers import pkce_pair
from tests.oauthflows.test_client_metadata_deadline import DripServer, http_answer

pytestmark = [pytest.mark.postgres_only]

DEADLINE = 5  # settings.OAUTH2_PROVIDER["CIMD_FETCH_TIMEOUT_SECONDS"]
BOUND = DEADLINE + 2.5
REDIRECT = "http://127.0.0.1:33419/callback"


@pytest.fixture
def server(request, _postgres_only_guard, transactional_db):
    env = {"OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK": "1", "OAUTH_CLIENT_METADATA_MAX_FETCHES": "1"}
    with running_server(database_url(connection.settings_dict), workers=3, timeout=20, env=env) as live:
        yield live
        report = request.node.stash.get(REPORTS, {}).get("call")
        if report is None or report.failed:
            print_log(live)


def authorize(base: str, client_id: str) -> tuple[requests.Response, float]:
    query = urlencode(
        {
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "scope": "PROFILE_READ",
            "state": "s1",
            "code_challenge": pkce_pair()[1],
            "code_challenge_method": "S256",
        }
    )
    started = time.monotonic()
    response = requests.get(
        f"{base}/auth/oauth2/authorize?{query}", allow_redirects=False, headers={"Connection": "close"}, timeout=60
    )
    return response, time.monotonic() - started


def test_three_dripping_documents_at_once_end_in_a_400_within_the_bound(server):
    workers = sorted(server.worker_pids())
    # Each worker's first request loads what Django loads lazily (seconds on a busy machine): warm
    # them all up first, with the 400 page itself (an unknown client), so that "at once" means it.
    for _ in range(4 * len(workers)):
        authorize(server.url, "no-such-client")
    # Headers at once, then a body one byte a second that would take minutes.
    drip = DripServer(answer=lambda: http_answer(b'{"client_id": "' + b"x" * 300 + b'"}'), fast=120)
    try:
        results: dict[int, tuple[requests.Response, float]] = {}

        def attempt(index: int) -> None:
            results[index] = authorize(server.url, f"http://127.0.0.1:{drip.port}/agent-{index}.json")

        threads = [threading.Thread(target=attempt, args=(index,)) for index in range(3)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        metadata_times = []
        while any(thread.is_alive() for thread in threads) or time.monotonic() - started < 1:
            asked = time.monotonic()
            answer = requests.get(
                server.url + "/.well-known/oauth-authorization-server", headers={"Connection": "close"}, timeout=30
            )
            assert answer.status_code == 200
            metadata_times.append(time.monotonic() - asked)
            time.sleep(0.3)
        for thread in threads:
            thread.join()
    finally:
        drip.stop()
    print("authorizations:", [(r.status_code, round(t, 2)) for r, t in results.values()], "metadata:", metadata_times)
    for response, took in results.values():
        assert response.status_code == 400, response.text[:500]
        assert "Location" not in response.headers
        assert took < BOUND
    texts = sorted((took, response.text) for response, took in results.values())
    # Server-wide cap of one: two refused at once, one fetched and given up at the deadline.
    assert all("Too many client ID metadata documents" in text for _, text in texts[:2])
    assert all(took < 1.5 for took, _ in texts[:2])
    assert f"within {DEADLINE} s" in texts[2][1] and texts[2][0] > DEADLINE - 0.5
    assert drip.hits == 1
    assert len(metadata_times) >= 3 and max(metadata_times) < 1.0, metadata_times
    assert sorted(server.worker_pids()) == workers  # no worker was killed
    assert "WORKER TIMEOUT" not in server.log_path.read_text(errors="replace")
