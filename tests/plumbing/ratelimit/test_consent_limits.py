"""Failed consent POSTs (an error page or another 4xx), per user and per address."""

from urllib.parse import urlencode

from django.test import Client

from oauthclients.models import Grant
from tests.oauthflows.helpers import AUTHORIZE, authorize_url, query_of

HERE, ELSEWHERE = "198.51.100.1", "198.51.100.2"
BAD_QUERY = urlencode({"client_id": "no-such-client", "redirect_uri": "https://evil.example/cb", "state": "xyz"})


def bad_consent(browser, *, address=HERE, decision="allow"):
    return browser.post(f"{AUTHORIZE}/{decision}?{BAD_QUERY}", REMOTE_ADDR=address)


def allow(browser, client, *, address=HERE, decision="allow"):
    action = authorize_url(client).replace(AUTHORIZE + "?", f"{AUTHORIZE}/{decision}?", 1)
    return browser.post(action, REMOTE_ADDR=address)


def assert_refused(response):
    assert response.status_code == 429, response.content[:300]
    assert response["Content-Type"].startswith("text/html")
    assert b"Too many attempts" in response.content
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "Location" not in response


def test_failures_under_the_limit_leave_consent_working(browser, approved_confidential, limits):
    client, _secret = approved_confidential
    limits(consent_failures_per_user=(3, 60), consent_failures_per_address=(3, 60))
    for decision in ("allow", "deny"):
        assert bad_consent(browser, decision=decision).status_code == 400
    response = allow(browser, client)
    assert response.status_code == 302
    assert "code" in query_of(response["Location"])


def test_a_user_over_the_limit_is_refused_from_anywhere_and_gets_no_code(browser, approved_confidential, limits):
    client, _secret = approved_confidential
    limits(consent_failures_per_user=(3, 60))
    for address in ("198.51.100.1", "198.51.100.2", "198.51.100.3"):
        assert bad_consent(browser, address=address).status_code == 400
    assert_refused(allow(browser, client, address="198.51.100.4"))
    assert not Grant.objects.exists()


def test_an_address_over_the_limit_is_refused_for_every_user(
    browser, second_browser, approved_confidential, limits, django_assert_num_queries
):
    client, _secret = approved_confidential
    limits(consent_failures_per_address=(3, 60))
    for _ in range(3):
        assert bad_consent(browser).status_code == 400
    with django_assert_num_queries(0):  # refused on the address: no session or user loaded
        assert_refused(allow(second_browser, client))
    assert allow(second_browser, client, address=ELSEWHERE).status_code == 302


def test_one_users_failures_do_not_limit_another_user_at_another_address(
    browser, second_browser, approved_confidential, limits
):
    client, _secret = approved_confidential
    limits(consent_failures_per_user=(2, 60))
    for _ in range(2):
        assert bad_consent(browser).status_code == 400
    assert_refused(allow(browser, client, address=ELSEWHERE))
    assert "code" in query_of(allow(second_browser, client, address=ELSEWHERE)["Location"])


def test_denying_and_allowing_are_not_failures(browser, approved_confidential, limits):
    client, _secret = approved_confidential
    limits(consent_failures_per_user=(1, 60), consent_failures_per_address=(1, 60))
    for _ in range(3):
        denied = allow(browser, client, decision="deny")
        assert query_of(denied["Location"])["error"] == "access_denied"
        assert allow(browser, client).status_code == 302
    assert bad_consent(browser).status_code == 400
    assert_refused(bad_consent(browser))


def test_posts_before_login_are_not_counted(approved_confidential, limits):
    client, _secret = approved_confidential
    limits(consent_failures_per_address=(1, 60))
    for _ in range(3):
        response = allow(Client(), client)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
