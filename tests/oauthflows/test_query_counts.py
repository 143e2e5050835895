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


def test_the_token_writer_adds_no_statement_to_the_code_exchange_or_the_refresh(browser, api, confidential):
    """The lineage (tokens.services.access_token_issue) rides in the two INSERTs the hot paths always
    made: on PostgreSQL the client's secret, the one-statement claim (tokens.redemption) and the two
    inserts; elsewhere the full path's lock, writes and the same inserts."""
    client, secret = confidential
    exchange(api, client, get_code(browser, client), secret=secret)  # first use records last_used_at
    code = get_code(browser, client)
    response, statements = queries(lambda: exchange(api, client, code, secret=secret))
    assert response.status_code == 200
    assert len(statements) == (4 if connection.vendor == "postgresql" else 5), statements
    response, statements = queries(lambda: refresh(api, client, response.json()["refresh_token"], secret=secret))
    assert response.status_code == 200
    assert len(statements) == (4 if connection.vendor == "postgresql" else 6), statements
    inserted = [sql for sql in statements if sql.startswith('INSERT INTO "oauthclients_accesstoken"')]
    assert len(inserted) == 1 and '"token_family"' in inserted[0], statements


def test_the_consent_page_is_the_floors_three_statements_even_when_asked_again(browser, confidential):
    """bench/floor.py's authorize page makes three (session, user, client): ours too. The standing
    consent rides in the client's statement (oauthflows.pages.authorization._CLIENT_WITH_STANDING_QUERY)."""
    from tests.oauthflows.helpers import asking_again, authorize_url

    client, _secret = confidential
    response, statements = queries(lambda: browser.get(authorize_url(client)))
    assert response.status_code == 200
    # session, user with its profile (profiles.backends: "Signed in as" needs no query of its own),
    # and the client with the user's standing consent
    assert len(statements) == 3, statements
    assert not any(sql.startswith('SELECT "oauthclients_consent"') for sql in statements)
    # prompt=consent: the page whatever was granted before; the consent is still read, to show
    # what was granted apart from what is new (a step-up)
    response, statements = queries(lambda: browser.get(asking_again(authorize_url(client))))
    assert response.status_code == 200
    assert len(statements) == 3, statements


def test_the_standing_consent_read_with_the_client_skips_the_page_or_shows_the_step_up(browser, confidential):
    """The consent loaded with the client decides as the separate lookup did: covered, the code at once
    (the page skipped); more scopes, the page with what was granted apart from what is new."""
    from tests.oauthflows.helpers import asking_again, authorize_url

    client, _secret = confidential
    url = asking_again(authorize_url(client, scope="PROFILE_READ"))
    assert browser.get(url).status_code == 200
    allowed = browser.post(url.replace("/auth/oauth2/authorize?", "/auth/oauth2/authorize/allow?"))
    assert allowed.status_code == 302
    again = browser.get(authorize_url(client, scope="PROFILE_READ"))
    assert again.status_code == 302 and "code=" in again["Location"]
    more = browser.get(authorize_url(client, scope="PROFILE_READ BOOKING_READ"))
    assert more.status_code == 200
    assert 'id="access-granted-title"' in more.content.decode()


def test_the_consent_post_statements_first_time_and_after(browser, confidential):
    from tests.oauthflows.helpers import asking_again, authorize_url

    client, _secret = confidential
    url = asking_again(authorize_url(client))
    allow = url.replace("/auth/oauth2/authorize?", "/auth/oauth2/authorize/allow?")
    for _ in range(2):  # a new consent, then one that exists
        assert browser.get(url).status_code == 200
        response, statements = queries(lambda: browser.post(allow))
        assert response.status_code == 302
        # session, user, client (once: the validated client is reused by the validator), then
        # the code, the consent (one upsert) and its audit row: one statement on PostgreSQL
        # (three data-modifying CTEs, OAUTH_CONSENT_STATEMENT: tests/oauthflows/test_consent_statement.py),
        # three elsewhere
        expected = 4 if connection.vendor == "postgresql" else 6
        assert len(statements) == expected, statements
        assert sum("oauthclients_oauthclient" in sql and sql.startswith("SELECT") for sql in statements) == 1
