from tests.oauthflows.helpers import exchange, get_code, me, refresh


def test_confidential_client_full_flow(browser, api, confidential, end_user):
    client, secret = confidential
    code = get_code(browser, client, scope="PROFILE_READ BOOKING_READ")
    response = exchange(api, client, code, secret=secret)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"access_token", "refresh_token", "token_type", "expires_in", "scope"}
    assert body["token_type"] == "bearer" and body["expires_in"] == 1800
    assert body["scope"] == "PROFILE_READ BOOKING_READ"
    assert response["Cache-Control"] == "no-store" and response["Pragma"] == "no-cache"
    profile = me(api, body["access_token"])
    assert profile.status_code == 200, profile.content
    assert profile.json()["data"]["username"] == end_user.username
    renewed = refresh(api, client, body["refresh_token"], secret=secret)
    assert renewed.status_code == 200, renewed.content
    assert renewed.json()["scope"] == "PROFILE_READ BOOKING_READ"
    assert me(api, renewed.json()["access_token"]).status_code == 200


def test_get_absolute_url_is_the_owners_client_page(confidential):
    client, _ = confidential
    assert client.get_absolute_url() == f"/settings/developer/clients/{client.client_id}/"
