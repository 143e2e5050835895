"""Exactly one winner on SQLite too, across processes (SECURITY.md, "Authorization codes").

The embedded default must hold the same guarantee as PostgreSQL: every atomic block takes the
write lock up front (BEGIN IMMEDIATE, see settings), so a gunicorn with several workers on one
SQLite file serializes the exchanges and only the first one finds the code unused.
"""

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.integration.flows import all_at_once, authorize, exchange, login, me, refresh, statuses, winner
from tests.integration.server import PROJECT_ROOT, running_server, server_environment

CONCURRENCY = 20
SETUP = """
import json
from django.contrib.auth import get_user_model
from oauthclients import services
User = get_user_model()
owner = User.objects.create_user("owner", "owner@example.com", "correct-horse-battery-staple")
User.objects.create_user("racer", "racer@example.com", "correct-horse-battery-staple")
created = services.client_create(owner=owner, name="Racer", purpose="Races.", website_url="https://racer.example.com",
    kind="confidential", redirect_uris=["http://localhost:8765/cb"], scopes=["PROFILE_READ"], approve=True)
print(json.dumps({"client_id": created.client.client_id, "secret": created.secret.plaintext}))
"""


@pytest.fixture
def sqlite_server(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    env = server_environment(url)
    manage = [sys.executable, "manage.py"]
    subprocess.run(manage + ["migrate", "--noinput", "-v", "0"], cwd=PROJECT_ROOT, env=env, check=True, timeout=120)
    out = subprocess.run(
        manage + ["shell", "-c", SETUP],
        cwd=PROJECT_ROOT,
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    )
    app = json.loads(out.stdout.strip().splitlines()[-1])
    client = SimpleNamespace(client_id=app["client_id"], redirect_uri_list=["http://localhost:8765/cb"])
    with running_server(url) as live:
        yield live, client, app["secret"]


def rows(tmp_path_db: str, sql: str) -> int:
    import sqlite3

    with sqlite3.connect(tmp_path_db) as db:
        return db.execute(sql).fetchone()[0]


def test_one_code_sent_20_times_at_once_has_one_winner_on_sqlite(sqlite_server, tmp_path):
    live, client, secret = sqlite_server
    browser = login(live.url, "racer")
    code = authorize(browser, live.url, client)
    responses = all_at_once(CONCURRENCY, lambda _: exchange(live.url, client, secret, code))
    assert statuses(responses) == [200] + [400] * (CONCURRENCY - 1)
    assert {r.json()["error"] for r in responses if r.status_code != 200} == {"invalid_grant"}
    db = str(tmp_path / "db.sqlite3")
    # One pair was minted; the losers' presentations of the used code then revoked it (strictly
    # single use, RFC 9700 §4.5).
    assert rows(db, "SELECT COUNT(*) FROM oauthclients_refreshtoken") == 1
    assert rows(db, "SELECT COUNT(*) FROM oauthclients_refreshtoken WHERE revoked IS NULL") == 0
    assert me(live.url, winner(responses)["access_token"]).status_code == 401

    # A fresh code for the refresh race.
    tokens = exchange(live.url, client, secret, authorize(browser, live.url, client)).json()

    # The same for one refresh token: one rotation, the losers revoke nothing.
    responses = all_at_once(CONCURRENCY, lambda _: refresh(live.url, client.client_id, secret, tokens["refresh_token"]))
    assert statuses(responses) == [200] + [400] * (CONCURRENCY - 1)
    renewed = winner(responses)
    assert me(live.url, renewed["access_token"]).status_code == 200
    assert rows(db, "SELECT COUNT(*) FROM oauthclients_refreshtoken WHERE revoked IS NULL") == 1
    assert refresh(live.url, client.client_id, secret, renewed["refresh_token"]).status_code == 200
