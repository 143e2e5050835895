"""Database round trips per request (issue 5 targets: 1 for /v2/me, at most 6 for exchange and refresh).

Savepoints are left out of the count: they exist only because each test runs inside a transaction.
"""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.oauthflows.helpers import exchange, get_code, me, refresh


def queries(fn):
    with CaptureQueriesContext(connection) as captured:
        response = fn()
    statements = [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]
    return response, statements


def test_me_is_one_query(browser, api, confidential):
    client, secret = confidential
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    response, statements = queries(lambda: me(api, tokens["access_token"]))
    assert response.status_code == 200
    assert len(statements) == 1, statements


def test_exchange_and_refresh_take_at_most_six_queries(browser, api, confidential):
    client, secret = confidential
    exchange(api, client, get_code(browser, client), secret=secret)  # first use records last_used_at
    code = get_code(browser, client)
    response, statements = queries(lambda: exchange(api, client, code, secret=secret))
    assert response.status_code == 200
    assert len(statements) <= 6, statements
    tokens = response.json()
    for _ in range(2):
        response, statements = queries(
            lambda tokens=tokens: refresh(api, client, tokens["refresh_token"], secret=secret)
        )
        assert response.status_code == 200
        assert len(statements) <= 6, statements
        tokens = response.json()
