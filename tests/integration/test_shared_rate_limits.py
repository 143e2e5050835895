"""Four gunicorn workers on PostgreSQL without Redis share one count per limit (the counters live in
the database, plumbing/countercache.py): a client over its limit on one worker is refused by all."""

import json

import pytest
import requests

from oauthclients.models import OAuthClient


@pytest.fixture
def server_env() -> dict[str, str]:
    return {"RATELIMIT_ENABLED": "1", "RATELIMIT_REGISTRATIONS_PER_ADDRESS": "6/h"}


def test_a_limit_holds_across_four_workers(server):
    body = json.dumps({"client_name": "Agent", "redirect_uris": ["http://127.0.0.1:33418/cb"]})
    statuses = []
    for _ in range(14):
        # A fresh connection each time, so that the requests spread over the workers.
        response = requests.post(
            server.url + "/v2/auth/oauth2/register",
            data=body,
            headers={"Content-Type": "application/json", "Connection": "close"},
            timeout=10,
        )
        statuses.append(response.status_code)
    assert statuses[:6] == [201] * 6
    assert statuses[6:] == [429] * 8
    assert len(server.worker_pids()) == 4
    assert OAuthClient.objects.filter(name="Agent").count() == 6
