"""From outside, as the red team attacked (issue "The front door holds", High 1 and Low 7): gunicorn
with four workers, debug off, PostgreSQL and no Redis. Thirty wrong codes, then the right one signs
nobody in, whichever worker answers; and a code used once at one worker is refused at every other
(allauth's used codes in the database's shared cache, plumbing/sharedcache.py)."""

import time

import pyotp
import pytest
import requests
from allauth.mfa.totp.internal.auth import TOTP
from django.db import connection

from tests.factories import PASSWORD
from tests.integration.flows import TIMEOUT, _csrf_token, make_server_user

SECOND_STEP = "/accounts/2fa/authenticate/"
CLOSE = {"Connection": "close"}  # a fresh connection each time: the requests spread over the workers


@pytest.fixture
def server_env(settings) -> dict[str, str]:
    # The TOTP secret is sealed in the test process: the server opens it with the same key.
    return {"RATELIMIT_ENABLED": "1", "OAUTH_SIGNING_KEY_ENCRYPTION_KEY": settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY}


@pytest.fixture(autouse=True)
def _no_counts_left(transactional_db):
    """The counters and the shared cache are tables no model owns: the test flush leaves them."""
    yield
    with connection.cursor() as cursor:
        for table in ("ratelimit_counters", "shared_cache"):
            if table in connection.introspection.table_names():
                cursor.execute(f"DELETE FROM {table}")


@pytest.fixture
def person_with_totp(transactional_db):
    user = make_server_user("alice")
    secret = pyotp.random_base32()
    TOTP.activate(user, secret)
    return user, secret


def at_second_step(base_url: str, username: str) -> tuple[requests.Session, str]:
    """A browser whose password was right, and the CSRF token of the second step's form."""
    browser = requests.Session()
    page = browser.get(base_url + "/accounts/login/", headers=CLOSE, timeout=TIMEOUT)
    response = post(browser, base_url, "/accounts/login/", _csrf_token(page), login=username, password=PASSWORD)
    assert response.status_code == 302 and response.headers["Location"].startswith(SECOND_STEP), response.text[:300]
    page = browser.get(base_url + SECOND_STEP, headers=CLOSE, timeout=TIMEOUT)
    assert page.status_code == 200, page.status_code
    return browser, _csrf_token(page)


def post(browser: requests.Session, base_url: str, path: str, token: str, **data) -> requests.Response:
    return browser.post(
        base_url + path,
        data={"csrfmiddlewaretoken": token, **data},
        headers={"Origin": base_url, "Referer": base_url + path, **CLOSE},
        allow_redirects=False,
        timeout=TIMEOUT,
    )


def signed_in(browser: requests.Session, base_url: str) -> bool:
    page = browser.get(base_url + "/settings/apps/", headers=CLOSE, allow_redirects=False, timeout=TIMEOUT)
    return page.status_code == 200  # else a redirect to the login page


def wrong(secret: str) -> str:
    valid = {pyotp.TOTP(secret).at(time.time() + shift) for shift in (-30, 0, 30)}
    return next(code for code in ("000000", "111111", "222222") if code not in valid)


def test_thirty_wrong_codes_then_the_right_one_signs_nobody_in(server, person_with_totp):
    _user, secret = person_with_totp
    browser, token = at_second_step(server.url, "alice")
    for _ in range(30):
        assert post(browser, server.url, SECOND_STEP, token, code=wrong(secret)).status_code == 200
    refused = post(browser, server.url, SECOND_STEP, token, code=pyotp.TOTP(secret).now())
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 900
    assert "Too many wrong codes" in refused.text
    assert not signed_in(browser, server.url)
    assert len(server.worker_pids()) == 4


def test_a_code_used_at_one_worker_is_refused_at_every_other(server, person_with_totp):
    _user, secret = person_with_totp
    # allauth accepts this period's code only (no tolerance in production): start early in a period,
    # so that every replay below is of a code still current.
    remaining = 30 - time.time() % 30
    if remaining < 22:
        time.sleep(remaining + 0.2)
    code = pyotp.TOTP(secret).now()
    browser, token = at_second_step(server.url, "alice")
    assert post(browser, server.url, SECOND_STEP, token, code=code).status_code == 302
    assert signed_in(browser, server.url)
    # Eight more sign-ins with the same code, each over new connections: with four workers each
    # keeping its own used codes, three of four would have let it in.
    for _ in range(8):
        again, token = at_second_step(server.url, "alice")
        assert post(again, server.url, SECOND_STEP, token, code=code).status_code == 200
        assert not signed_in(again, server.url)
    assert pyotp.TOTP(secret).now() == code, "the period turned during the replays: the test proved nothing"
