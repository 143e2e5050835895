"""Failed logins, per address and per username, on the login form and the admin's."""

import pytest
from django.test import Client

from tests.factories import PASSWORD, make_user

LOGIN, ADMIN_LOGIN = "/accounts/login/", "/admin/login/"
HERE, ELSEWHERE = "198.51.100.1", "198.51.100.2"


@pytest.fixture
def person(db):
    return make_user("alice")


def log_in(username, password, *, address=HERE, path=LOGIN, browser=None):
    browser = browser or Client()
    return browser.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def assert_refused(response):
    assert response.status_code == 429, response.content[:300]
    assert response["Content-Type"].startswith("text/html")
    assert b"Too many attempts" in response.content
    assert 1 <= int(response["Retry-After"]) <= 300
    assert response["Cache-Control"] == "no-store"


def assert_logged_in(response):
    assert response.status_code == 302, response.content[:300]
    assert response.wsgi_request.user.is_authenticated


def test_failures_under_the_limit_leave_login_working(person, limits):
    limits(login_failures_per_address=(3, 300), login_failures_per_username=(3, 300))
    for _ in range(2):
        assert log_in("alice", "wrong").status_code == 200
    assert_logged_in(log_in("alice", PASSWORD))


def test_a_username_over_its_limit_is_refused_from_anywhere_without_checking_the_password(
    person, limits, django_assert_num_queries
):
    limits(login_failures_per_username=(3, 300))
    for address in ("198.51.100.1", "198.51.100.2", "198.51.100.3"):
        assert log_in("alice", "wrong", address=address).status_code == 200
    browser = Client()
    with django_assert_num_queries(0):  # no user lookup, no password hash
        assert_refused(log_in("alice", PASSWORD, address="198.51.100.4", browser=browser))
    assert "sessionid" not in browser.cookies
    # Other accounts can still log in from that address.
    make_user("bob")
    assert_logged_in(log_in("bob", PASSWORD, address="198.51.100.4"))


def test_case_and_compatibility_variants_of_a_username_share_its_budget(person, limits):
    limits(login_failures_per_username=(3, 300))
    for variant in ("alice", "ALICE", "Ａｌｉｃｅ"):  # the last one in fullwidth letters (NFKC)
        assert log_in(variant, "wrong").status_code == 200
    assert_refused(log_in("Alice", PASSWORD, address=ELSEWHERE))


@pytest.mark.parametrize("variant", [" alice", "alice ", "\talice\n", "\u3000ALICE\u00a0", "  Ａｌｉｃｅ  "])
def test_padded_variants_of_a_username_share_its_budget(person, limits, variant):
    # The login form strips and NFKC-normalises the username before authenticating, so padding
    # names the same account: it must not buy a fresh budget.
    limits(login_failures_per_username=(2, 300))
    assert log_in("alice", "wrong").status_code == 200
    assert log_in(variant, "wrong", address=ELSEWHERE).status_code == 200
    assert_refused(log_in("alice", PASSWORD, address="198.51.100.9"))


def test_a_padded_username_still_logs_in(person):
    # The same normalisation as authentication: padding is no different account.
    assert_logged_in(log_in("  alice  ", PASSWORD))


def test_an_address_over_its_limit_is_refused_whatever_the_username(person, limits):
    limits(login_failures_per_address=(3, 300))
    for name in ("carol", "dave", "erin"):
        assert log_in(name, "wrong").status_code == 200
    assert_refused(log_in("alice", PASSWORD))
    assert_logged_in(log_in("alice", PASSWORD, address=ELSEWHERE))


def test_successful_logins_do_not_count_as_failures(person, limits):
    limits(login_failures_per_address=(2, 300), login_failures_per_username=(2, 300))
    for _ in range(4):
        assert_logged_in(log_in("alice", PASSWORD))
    for _ in range(2):
        assert log_in("alice", "wrong").status_code == 200
    assert_refused(log_in("alice", "wrong"))


def test_the_admin_login_form_checks_no_password(person, limits):
    # /admin/login/ is the one login (allauth's secure_admin_login): it checks no password itself,
    # so it is no second, unlimited place to guess them; the one budget still counts it.
    limits(login_failures_per_username=(3, 300))
    response = log_in("alice", PASSWORD, path=ADMIN_LOGIN)
    assert response.status_code == 302 and response["Location"].startswith(LOGIN + "?next=")
    assert "_auth_user_id" not in Client().session
    for _ in range(3):
        assert log_in("alice", "wrong").status_code == 200
    assert_refused(log_in("alice", PASSWORD, path=ADMIN_LOGIN))


def test_viewing_the_login_form_is_not_limited(person, limits):
    limits(login_failures_per_address=(1, 300))
    assert log_in("alice", "wrong").status_code == 200
    assert Client().get(LOGIN, REMOTE_ADDR=HERE).status_code == 200
    assert_refused(log_in("alice", "wrong"))
