"""Legacy clients and their migration (spec §2.1, §5.6, §5.8)."""

from oauthclients import services
from tests.oauthflows.helpers import assert_tokens, authorize_url, exchange, get_code, me, query_of, refresh
from tests.oauthflows.test_token import assert_token_error


def test_a_legacy_client_without_scope_gets_an_unrestricted_token(browser, api, legacy):
    client, secret = legacy
    page = browser.get(authorize_url(client, scope=None))
    assert page.status_code == 200 and "Full access" in page.content.decode()
    tokens = assert_tokens(exchange(api, client, get_code(browser, client, scope=None), secret=secret), "")
    assert me(api, tokens["access_token"]).status_code == 200
    patched = me(api, tokens["access_token"], method="patch", data={"name": "Legacy"}, content_type="application/json")
    assert patched.status_code == 200
    assert_tokens(refresh(api, client, tokens["refresh_token"], secret=secret), "")


def test_migration_step_a_the_scope_parameter_restricts_new_tokens(browser, api, legacy):
    client, secret = legacy
    # Any known scope, no subset check: the client has no scopes yet.
    code = get_code(browser, client, scope="BOOKING_READ,ORG_WEBHOOK_READ")
    tokens = assert_tokens(exchange(api, client, code, secret=secret), "BOOKING_READ ORG_WEBHOOK_READ")
    assert me(api, tokens["access_token"]).status_code == 403


def test_a_legacy_client_still_refuses_unknown_scope_names(browser, legacy):
    client, _ = legacy
    response = browser.get(authorize_url(client, scope="PROFILE_READ MADE_UP"))
    query = query_of(response["Location"])
    assert query["error"] == "invalid_scope" and "MADE_UP" in query["error_description"]


def test_migration_step_b_enforces_scopes_on_new_requests_and_keeps_old_tokens(browser, api, legacy, owner):
    client, secret = legacy
    old = assert_tokens(exchange(api, client, get_code(browser, client, scope=None), secret=secret), "")

    client = services.client_set_scopes(client=client, scopes=["PROFILE_READ", "BOOKING_READ"], actor=owner)
    assert client.is_legacy is False and client.status == "approved"

    # No scope is now an error, and scopes must be a subset.
    missing = query_of(browser.get(authorize_url(client, scope=None))["Location"])
    assert missing["error"] == "invalid_scope"
    outside = query_of(browser.get(authorize_url(client, scope="PROFILE_READ WEBHOOK_READ"))["Location"])
    assert outside["error"] == "invalid_scope" and "WEBHOOK_READ" in outside["error_description"]
    new = assert_tokens(
        exchange(api, client, get_code(browser, client, scope="PROFILE_READ"), secret=secret), "PROFILE_READ"
    )
    assert me(api, new["access_token"]).status_code == 200

    # Tokens issued before stay unrestricted, through refreshes too, until the user re-authorizes.
    assert (
        me(api, old["access_token"], method="patch", data={"name": "x"}, content_type="application/json").status_code
        == 200
    )
    renewed = assert_tokens(refresh(api, client, old["refresh_token"], secret=secret), "")
    assert (
        me(
            api, renewed["access_token"], method="patch", data={"name": "y"}, content_type="application/json"
        ).status_code
        == 200
    )


def test_an_unrestricted_legacy_token_cannot_be_narrowed_into_scopes_it_never_had(browser, api, legacy):
    client, secret = legacy
    tokens = assert_tokens(exchange(api, client, get_code(browser, client, scope=None), secret=secret), "")
    assert_token_error(
        refresh(api, client, tokens["refresh_token"], secret=secret, scope="PROFILE_READ"), "invalid_scope"
    )
