"""Developer settings: who may see what, the client list and the client page."""

import pytest
from django.test import Client

from oauthclients import services
from oauthclients.models import ClientSecret, OAuthClient
from oauthclients.selectors import oauth_endpoints
from tests.factories import make_client
from tests.oauthclients.pages import edit_data, registration_data, url


@pytest.mark.parametrize("page", ["client_list", "client_create", "client_detail", "client_update"])
def test_every_page_sends_an_anonymous_visitor_to_the_login(client, client_obj, page):
    path = url(page) if page in ("client_list", "client_create") else url(page, client_obj)

    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_an_anonymous_post_changes_nothing(client, client_obj):
    response = client.post(url("client_secret_create", client_obj))

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert client_obj.secrets.count() == 1


def test_the_list_shows_only_my_clients(client, owner, other_developer):
    client.force_login(owner)
    mine = make_client(owner, name="Mine Sync").client
    make_client(other_developer, name="Someone Else's App")

    response = client.get(url("client_list"))

    assert response.status_code == 200
    assert list(response.context["clients"]) == [mine]
    content = response.content.decode()
    assert "Mine Sync" in content
    assert url("client_detail", mine) in content
    assert '<span class="badge pending">Pending review</span>' in content
    assert "Someone Else" not in content


def test_the_list_offers_to_register_a_new_client(client, owner):
    client.force_login(owner)

    response = client.get(url("client_list"))

    assert "Register a new client" in response.content.decode()
    assert url("client_create") in response.content.decode()


def test_the_client_page_shows_the_client_id_and_the_three_urls(client, owner, client_obj):
    client.force_login(owner)

    response = client.get(url("client_detail", client_obj))

    content = response.content.decode()
    assert response.status_code == 200
    assert client_obj.client_id in content
    assert "http://testserver/auth/oauth2/authorize" in content
    assert "Access Token Request URL" in content
    assert "Refresh Token Request URL" in content
    assert content.count("http://testserver/v2/auth/oauth2/token") == 2


def test_the_endpoints_follow_the_issuer(settings):
    settings.OAUTH_ISSUER = "https://auth.example.com"

    endpoints = oauth_endpoints()

    assert endpoints.authorization_url == "https://auth.example.com/auth/oauth2/authorize"
    assert endpoints.access_token_url == "https://auth.example.com/v2/auth/oauth2/token"
    assert endpoints.refresh_token_url == "https://auth.example.com/v2/auth/oauth2/token"


def test_the_client_page_lists_secrets_by_hint_and_scopes_by_level(client, owner, created):
    client.force_login(owner)

    response = client.get(url("client_detail", created.client))

    content = response.content.decode()
    assert f"{created.secret.secret.hint}…" in content
    assert created.secret.plaintext not in content
    assert "Generate new secret" in content
    assert "<h3>Personal</h3>" in content
    assert "View your profile" in content  # PROFILE_READ's description


def test_a_pending_client_page_says_only_the_owner_can_test_it(client, owner, client_obj):
    client.force_login(owner)

    content = client.get(url("client_detail", client_obj)).content.decode()

    assert "only you (its owner) can use it, for testing" in content
    assert "sends it back to review" in content


def test_a_public_client_page_says_it_has_no_secret_and_uses_pkce(client, owner):
    client.force_login(owner)
    public = make_client(owner, kind="public").client

    content = client.get(url("client_detail", public)).content.decode()

    assert "No secret — this public client uses PKCE" in content
    assert "Generate new secret" not in content


def test_a_rejected_client_page_shows_the_reason(client, owner, client_obj, reviewer):
    client.force_login(owner)
    services.client_reject(client=client_obj, actor=reviewer, reason="The website does not load.")

    content = client.get(url("client_detail", client_obj)).content.decode()

    assert "Rejected" in content
    assert "The website does not load." in content


def test_a_legacy_client_page_says_unrestricted_and_gives_the_migration_order(client, owner):
    client.force_login(owner)
    legacy = make_client(owner, is_legacy=True, approve=True).client

    content = client.get(url("client_detail", legacy)).content.decode()

    assert "Legacy: unrestricted" in content
    assert content.index("add the <code>scope</code> parameter") < content.index("select the matching scopes here")


@pytest.mark.parametrize(
    "method,page",
    [
        ("get", "client_detail"),
        ("get", "client_update"),
        ("post", "client_update"),
        ("post", "client_secret_create"),
        ("post", "client_secret_revoke"),
    ],
)
def test_another_developers_client_is_a_404(client, other_developer, created, method, page):
    client.force_login(other_developer)
    extra = [created.secret.secret.pk] if page == "client_secret_revoke" else []
    data = edit_data(created.client, name="Hijacked") if page == "client_update" else {}

    response = getattr(client, method)(url(page, created.client, *extra), data)

    assert response.status_code == 404
    assert OAuthClient.objects.get(pk=created.client.pk).name == "Calendar Sync"
    active = ClientSecret.objects.filter(client=created.client, revoked_at__isnull=True)
    assert list(active) == [created.secret.secret]


@pytest.mark.parametrize("page", ["client_secret_create", "client_secret_revoke"])
def test_get_on_a_state_changing_url_is_405(client, owner, created, page):
    client.force_login(owner)
    extra = [created.secret.secret.pk] if page == "client_secret_revoke" else []

    response = client.get(url(page, created.client, *extra))

    assert response.status_code == 405
    assert created.client.secrets.filter(revoked_at__isnull=True).count() == 1


def test_a_state_change_without_the_csrf_token_is_refused(owner, client_obj):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)

    response = browser.post(url("client_secret_create", client_obj))

    assert response.status_code == 403
    assert client_obj.secrets.count() == 1


# --- first-hour finding 15: two clients can be told apart; the client page lists every URL ---


def test_the_client_list_shows_each_client_id(client, owner):
    first = make_client(owner, name="My Web App").client
    second = make_client(owner, name="My Other App").client
    client.force_login(owner)
    page = client.get(url("client_list")).content.decode()
    assert first.client_id in page and second.client_id in page


def test_a_second_client_with_the_same_name_is_refused(client, owner, other_developer):
    make_client(owner, name="My Web App")
    make_client(other_developer, name="My Web App")  # another developer's: no matter
    client.force_login(owner)
    response = client.post(url("client_create"), registration_data(name=" my web app "))
    assert response.status_code == 200 and "already have a client with this name" in response.content.decode()
    assert OAuthClient.objects.filter(user=owner).count() == 1


def test_renaming_onto_another_clients_name_is_refused_but_keeping_ones_own_is_fine(client, owner):
    make_client(owner, name="Taken")
    mine = make_client(owner, name="Mine").client
    client.force_login(owner)
    refused = client.post(url("client_update", mine), edit_data(mine, name="Taken"))
    assert refused.status_code == 200 and "already have a client with this name" in refused.content.decode()
    kept = client.post(url("client_update", mine), edit_data(mine, purpose="New purpose."))
    assert kept.status_code == 303


def test_the_client_page_lists_revocation_introspection_and_discovery_urls(client, owner):
    app = make_client(owner).client
    client.force_login(owner)
    page = client.get(url("client_detail", app)).content.decode()
    for path in ("/v2/auth/oauth2/revoke", "/v2/auth/oauth2/introspect", "/.well-known/oauth-authorization-server"):
        assert "http://testserver" + path in page


# --- first-hour finding 4: the in-app guide shows this server and the developer's own client ---


def test_the_guide_shows_the_running_issuer_not_the_example_host(client, owner):
    client.force_login(owner)
    page = client.get(url("integration_guide")).content.decode()
    assert "auth.example.com" not in page
    assert "http://testserver/auth/oauth2/authorize" in page and "http%3A%2F%2Ftestserver" in page


def test_the_guide_carries_the_developers_own_client_id_and_redirect_uri(client, owner, other_developer):
    app = make_client(owner, name="My Planner", redirect_uris=["https://planner.example/cb"]).client
    client.force_login(owner)
    page = client.get(url("integration_guide") + f"?client={app.client_id}").content.decode()
    assert f"client_id={app.client_id}" in page and "https://planner.example/cb" in page
    assert "app.example.com/callback" not in page
    newest = client.get(url("integration_guide")).content.decode()  # the newest client by default
    assert app.client_id in newest
    foreign = make_client(other_developer, name="Not Mine").client
    assert client.get(url("integration_guide") + f"?client={foreign.client_id}").status_code == 404


def test_a_developer_without_clients_gets_the_placeholders(client, other_developer):
    client.force_login(other_developer)
    page = client.get(url("integration_guide")).content.decode()
    assert "client_id=CLIENT_ID" in page and "https://app.example.com/callback" in page
