"""Connected apps at /settings/apps/: what the user authorized, and cutting an app off."""

from django.test import Client

from oauthclients.models import Grant
from tests.factories import make_client
from tests.oauthflows.helpers import assert_tokens, exchange, get_code, me, pkce_pair, refresh
from tests.oauthflows.test_token import assert_token_error
from tokens.models import Consent

APPS = "/settings/apps/"


def connect(browser, api, client, secret, scope="PROFILE_READ BOOKING_READ"):
    return assert_tokens(exchange(api, client, get_code(browser, client, scope=scope), secret=secret), scope)


def test_it_needs_login(db):
    response = Client().get(APPS)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_it_lists_authorized_apps_with_scopes_in_plain_words_and_dates(browser, api, confidential):
    client, secret = confidential
    connect(browser, api, client, secret)
    page = browser.get(APPS)
    html = page.content.decode()
    assert page.status_code == 200
    for text in (client.name, "View your profile", "List your bookings", "Authorized", "Last used", "Revoke access"):
        assert text in html, text
    assert "Never" not in html  # it has been used: a token was issued
    assert page["X-Frame-Options"] == "DENY"


def test_an_app_the_user_never_authorized_is_not_listed(browser, api, confidential, owner):
    client, secret = confidential
    make_client(owner, name="Stranger App", approve=True)
    connect(browser, api, client, secret)
    assert "Stranger App" not in browser.get(APPS).content.decode()


def test_another_users_apps_are_not_listed(browser, api, confidential, other_developer):
    client, secret = confidential
    connect(browser, api, client, secret)
    stranger = Client()
    stranger.force_login(other_developer)
    html = stranger.get(APPS).content.decode()
    assert client.name not in html and "No application has access" in html


def test_a_legacy_unrestricted_grant_says_full_access(browser, api, legacy):
    client, secret = legacy
    assert_tokens(exchange(api, client, get_code(browser, client, scope=None), secret=secret), "")
    assert "Full access" in browser.get(APPS).content.decode()


def test_revoking_asks_for_confirmation_then_kills_every_token_at_once(browser, api, confidential, end_user):
    client, secret = confidential
    first = connect(browser, api, client, secret)
    second = connect(browser, api, client, secret)  # another device
    pending_code = get_code(browser, client, scope="PROFILE_READ")  # issued, not yet exchanged
    confirm = browser.get(f"{APPS}{client.client_id}/revoke/")
    assert confirm.status_code == 200 and "Revoke access for" in confirm.content.decode()
    assert me(api, first["access_token"]).status_code == 200  # the GET changed nothing
    response = browser.post(f"{APPS}{client.client_id}/revoke/")
    assert response.status_code == 303 and response["Location"] == APPS
    for tokens in (first, second):
        assert me(api, tokens["access_token"]).status_code == 401
        assert_token_error(refresh(api, client, tokens["refresh_token"], secret=secret), "invalid_grant")
    assert_token_error(exchange(api, client, pending_code, secret=secret), "invalid_grant")
    html = browser.get(APPS).content.decode()
    assert f"{client.client_id}/revoke/" not in html and "no longer has access" in html
    assert not Consent.objects.filter(user=end_user, client=client).exists()


def test_revoking_one_app_leaves_the_others_and_other_users_alone(browser, api, confidential, owner, other_developer):
    client, secret = confidential
    other = make_client(owner, name="Other App", redirect_uris=client.redirect_uri_list, approve=True)
    mine = connect(browser, api, client, secret)
    other_tokens = connect(browser, api, other.client, other.secret.plaintext)
    someone = Client()
    someone.force_login(other_developer)
    theirs = connect(someone, api, client, secret)
    browser.post(f"{APPS}{client.client_id}/revoke/")
    assert me(api, mine["access_token"]).status_code == 401
    assert me(api, other_tokens["access_token"]).status_code == 200
    assert me(api, theirs["access_token"]).status_code == 200


def test_revoking_an_app_that_is_not_connected_is_404(browser, confidential, owner):
    client, _ = confidential
    assert browser.post(f"{APPS}{client.client_id}/revoke/").status_code == 404
    assert browser.get(f"{APPS}no-such-client/revoke/").status_code == 404


def test_revoke_is_csrf_protected(api, confidential, end_user, browser):
    client, secret = confidential
    tokens = connect(browser, api, client, secret)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(end_user)
    assert strict.post(f"{APPS}{client.client_id}/revoke/").status_code == 403
    assert me(api, tokens["access_token"]).status_code == 200


def test_a_public_clients_grant_is_listed_and_revocable(browser, api, public):
    verifier, challenge = pkce_pair()
    tokens = assert_tokens(
        exchange(api, public, get_code(browser, public, code_challenge=challenge), verifier=verifier), "PROFILE_READ"
    )
    assert public.name in browser.get(APPS).content.decode()
    browser.post(f"{APPS}{public.client_id}/revoke/")
    assert me(api, tokens["access_token"]).status_code == 401
    assert Grant.objects.filter(used_at__isnull=True).count() == 0


def test_authorizing_again_keeps_the_first_time_and_moves_the_last(browser, confidential, end_user):
    from datetime import timedelta

    from django.utils import timezone

    from tests.oauthflows.helpers import get_code as authorize
    from tokens.models import Consent

    client, _secret = confidential
    authorize(browser, client)
    first = Consent.objects.get(user=end_user, client=client)
    earlier = timezone.now() - timedelta(days=3)
    Consent.objects.filter(pk=first.pk).update(first_authorized_at=earlier, last_authorized_at=earlier)
    authorize(browser, client)
    again = Consent.objects.get(user=end_user, client=client)
    assert again.pk == first.pk and Consent.objects.count() == 1
    assert again.first_authorized_at == earlier and again.last_authorized_at > earlier


def test_the_revoke_message_names_the_app_as_users_were_shown_it_not_an_unreviewed_edit(
    browser, api, confidential, owner
):
    from oauthclients import services

    client, secret = confidential
    approved_name = client.name
    connect(browser, api, client, secret)
    services.client_update(
        client=client,
        actor=owner,
        name="Unreviewed New Name",
        purpose=client.purpose,
        website_url=client.website_url,
        redirect_uris=client.redirect_uri_list,
        scopes=client.scope_list,
    )  # back to review: users keep seeing the approved name
    response = browser.post(f"{APPS}{client.client_id}/revoke/", follow=True)
    shown = [str(message) for message in response.context["messages"]]
    assert shown == [f"{approved_name} no longer has access to your account."]


# --- right after Allow, before the app redeems its code ---------------------------------------------


def test_the_app_shows_as_soon_as_access_is_granted(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client, scope="PROFILE_READ BOOKING_READ")  # Allow: a code, no token yet
    html = browser.get(APPS).content.decode()
    assert "No application has access" not in html
    for text in (client.name, "View your profile", "List your bookings", "Authorized", "Revoke access"):
        assert text in html, text
    assert "Never" in html  # not used yet
    # Then the app redeems the code: still listed, now used.
    assert_tokens(exchange(api, client, code, secret=secret), "PROFILE_READ BOOKING_READ")
    html = browser.get(APPS).content.decode()
    assert client.name in html and "Never" not in html


def test_revoking_before_the_code_is_redeemed_leaves_the_app_nothing(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    assert browser.post(f"{APPS}{client.client_id}/revoke/").status_code == 303
    assert_token_error(exchange(api, client, code, secret=secret), "invalid_grant")
    html = browser.get(APPS).content.decode()
    assert f"{client.client_id}/revoke/" not in html and "No application has access" in html


def test_an_expired_code_or_a_rejected_app_is_not_listed(browser, confidential, reviewer):
    from django.utils import timezone

    from oauthclients import services

    client, _secret = confidential
    get_code(browser, client)
    Grant.objects.filter(application=client).update(expires=timezone.now())
    assert "No application has access" in browser.get(APPS).content.decode()
    get_code(browser, client)
    assert client.name in browser.get(APPS).content.decode()
    services.client_reject(client=client, actor=reviewer, reason="Not what it said it was.")
    assert "No application has access" in browser.get(APPS).content.decode()


def test_an_approved_app_that_registered_itself_names_no_developer_and_leaves_no_dangling_dot(
    browser, api, confidential
):
    """Its owner is the registry's internal account, not a developer anyone knows (as on the consent
    page); with no website, nothing follows the developer line."""
    from oauthclients.models import OAuthClient

    client, secret = confidential
    client.refresh_from_db()
    snapshot = {**(client.approved_snapshot or {}), "website_url": ""}
    OAuthClient.objects.filter(pk=client.pk).update(
        registration_source=OAuthClient.RegistrationSource.DCR, website_url="", approved_snapshot=snapshot
    )
    connect(browser, api, client, secret)
    html = browser.get(APPS).content.decode()
    assert "By a developer nobody knows: the app registered itself" in html
    assert f"<bdi>{client.user.get_username()}</bdi>" not in html
    line = html[html.index("By a developer nobody knows") :].split("</p>")[0]
    assert "·" not in line
