# ruff: noqa: F401, F403, F811 - the same tests, imported to run again
"""The token exchange's two lookups give the same answers: every test of test_token_exchange.py
again with OAUTH_FAST_REDEMPTION=0, the ORM's three queries in place of PostgreSQL's one statement
(oauthflows.token.exchange._look_up; on SQLite both runs take the ORM path)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.oauthflows.test_token_exchange import *
from tests.oauthflows.test_token_exchange import trade, user_tokens


@pytest.fixture(autouse=True)
def _orm_path(settings, request):
    if request.node.name.startswith("test_on_postgresql"):
        return
    settings.OAUTH_FAST_REDEMPTION = False


def test_on_postgresql_the_target_and_subject_are_one_statement(browser, api, confidential, mcp, exchange_allowed):
    if connection.vendor != "postgresql":
        pytest.skip("the one-statement lookup is PostgreSQL's")
    tokens = user_tokens(browser, api, confidential)
    trade(api, mcp, tokens["access_token"])  # the first use of a secret also records it (once a period)
    with CaptureQueriesContext(connection) as captured:
        response = trade(api, mcp, tokens["access_token"])
    assert response.status_code == 200, response.content
    statements = [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]
    # the caller's secret (compiled), the target with the subject, its app, user and family, the insert
    assert len(statements) == 3, statements
