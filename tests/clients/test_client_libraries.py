"""Real OAuth client libraries against a live server: requests-oauthlib and Authlib.

Each library, for a confidential and a public client, builds the authorization URL with PKCE (S256),
exchanges the code, calls /v2/me, and refreshes by itself once its access token looks expired.
Authlib then introspects (RFC 7662) and revokes (RFC 7009) with its own methods. The only settings
are the client's own: OAUTHLIB_INSECURE_TRANSPORT for the plain-HTTP loopback server, and no client
authentication for a public client. The user's part (log in, Allow) is a requests.Session posting
the forms as a browser would.

The server is pytest-django's live_server (a thread on the test database).
"""

import re
import time

import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session as AuthlibSession
from requests_oauthlib import OAuth2Session as RequestsOAuthlibSession

from tests.factories import make_client
from tests.oauthflows.helpers import asking_again, consent_form

AUTHORIZE = "/auth/oauth2/authorize"
TOKEN = "/v2/auth/oauth2/token"
REVOKE = "/v2/auth/oauth2/revoke"
INTROSPECT = "/v2/auth/oauth2/introspect"
ME = "/v2/me"
SCOPES = ["PROFILE_READ", "PROFILE_WRITE"]
TIMEOUT = 10
CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture
def live_issuer(live_server, settings, monkeypatch):
    settings.OAUTH_ISSUER = live_server.url
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")  # the client library's setting, for http://
    return live_server.url


@pytest.fixture
def closed_after():
    """closed_after(session) -> session, closed (its keep-alive connections too) after the test."""
    sessions = []
    yield lambda session: sessions.append(session) or session
    for session in sessions:
        session.close()


def allow(user_agent, live_issuer, authorization_url: str) -> str:
    """Show the consent page for the library's URL and click Allow; return the redirect Location."""
    assert authorization_url.startswith(live_issuer + AUTHORIZE + "?")
    authorization_url = asking_again(authorization_url)  # the page, even if granted before
    page = user_agent.get(authorization_url, allow_redirects=False, timeout=TIMEOUT)
    assert page.status_code == 200, page.text[:500]
    response = user_agent.post(
        authorization_url.replace(AUTHORIZE + "?", AUTHORIZE + "/allow?", 1),
        data={"csrfmiddlewaretoken": CSRF_RE.search(page.text)[1], **consent_form(page.text)},
        headers={"Referer": live_issuer + "/"},
        allow_redirects=False,
        timeout=TIMEOUT,
    )
    assert response.status_code == 302, response.text[:500]
    return response.headers["Location"]


@pytest.fixture(params=["confidential", "public"])
def app_of_each_kind(request, owner):
    """(client, secret or None, redirect_uri) of an approved client of either kind."""
    redirect_uri = "http://127.0.0.1:8765/callback"
    created = make_client(owner, kind=request.param, scopes=SCOPES, redirect_uris=[redirect_uri], approve=True)
    secret = created.secret.plaintext if request.param == "confidential" else None
    return created.client, secret, redirect_uri


def expire(token: dict) -> dict:
    """The same token, which the library now believes expired a minute ago."""
    return {**token, "expires_in": -60, "expires_at": time.time() - 60}


def assert_me(response, end_user):
    assert response.status_code == 200, response.text
    assert response.json()["data"]["username"] == end_user.username


def call_and_refresh(oauth, live_issuer, token: dict, refreshed: list, end_user):
    """Call /v2/me with the library's token; make the token look expired and call again: the
    library refreshes by itself (once) and the call succeeds with the new token."""
    assert token["token_type"] == "bearer" and token["expires_in"] == 1800
    assert_me(oauth.get(live_issuer + ME, timeout=TIMEOUT), end_user)

    oauth.token = expire(token)
    assert_me(oauth.get(live_issuer + ME, timeout=TIMEOUT), end_user)
    assert len(refreshed) == 1
    new = refreshed[0]
    assert oauth.token["access_token"] == new["access_token"] != token["access_token"]
    assert new["refresh_token"] != token["refresh_token"]
    scope = new["scope"] if isinstance(new["scope"], list) else new["scope"].split()  # oauthlib parses it
    assert new["token_type"] == "bearer" and set(scope) == set(SCOPES)
    # Rotation: the previous access token no longer works.
    stale = requests.get(
        live_issuer + ME, headers={"Authorization": f"Bearer {token['access_token']}"}, timeout=TIMEOUT
    )
    assert stale.status_code == 401


def test_requests_oauthlib(live_issuer, user_agent, app_of_each_kind, end_user, closed_after):
    client, secret, redirect_uri = app_of_each_kind
    refreshed = []
    credentials = {"client_id": client.client_id, **({"client_secret": secret} if secret else {})}
    oauth = closed_after(
        RequestsOAuthlibSession(
            client.client_id,
            redirect_uri=redirect_uri,
            scope=SCOPES,
            pkce="S256",
            auto_refresh_url=live_issuer + TOKEN,
            auto_refresh_kwargs=credentials,  # refresh: client_secret_post (or client_id alone)
            token_updater=refreshed.append,
        )
    )
    authorization_url, state = oauth.authorization_url(live_issuer + AUTHORIZE)
    assert "code_challenge_method=S256" in authorization_url
    location = allow(user_agent, live_issuer, authorization_url)

    if secret:  # exchange: client_secret_basic, the library's default
        token = oauth.fetch_token(
            live_issuer + TOKEN, authorization_response=location, client_secret=secret, timeout=TIMEOUT
        )
    else:
        token = oauth.fetch_token(
            live_issuer + TOKEN, authorization_response=location, include_client_id=True, timeout=TIMEOUT
        )
    call_and_refresh(oauth, live_issuer, dict(token), refreshed, end_user)


def test_authlib(live_issuer, user_agent, app_of_each_kind, end_user, closed_after):
    client, secret, redirect_uri = app_of_each_kind
    refreshed = []
    oauth = closed_after(
        AuthlibSession(
            client.client_id,
            secret,
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
            scope=" ".join(SCOPES),
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            token_endpoint=live_issuer + TOKEN,
            update_token=lambda token, refresh_token=None, access_token=None: refreshed.append(dict(token)),
        )
    )
    verifier = generate_token(64)
    authorization_url, state = oauth.create_authorization_url(live_issuer + AUTHORIZE, code_verifier=verifier)
    location = allow(user_agent, live_issuer, authorization_url)

    token = oauth.fetch_token(authorization_response=location, code_verifier=verifier, state=state, timeout=TIMEOUT)
    call_and_refresh(oauth, live_issuer, dict(token), refreshed, end_user)

    current = oauth.token
    if secret:  # introspection is for confidential clients
        claims = oauth.introspect_token(live_issuer + INTROSPECT, token=current["access_token"], timeout=TIMEOUT).json()
        assert (
            claims["active"] is True
            and claims["client_id"] == client.client_id
            and claims["username"] == end_user.username
        )
    revoked = oauth.revoke_token(
        live_issuer + REVOKE, token=current["refresh_token"], token_type_hint="refresh_token", timeout=TIMEOUT
    )
    assert revoked.status_code == 200
    assert oauth.get(live_issuer + ME, timeout=TIMEOUT).status_code == 401  # the whole authorization is gone


# --- first-hour finding 5: the guide's complete Authlib web app, run as a user would ---


def test_the_authlib_flask_example_signs_in_checks_iss_refreshes_and_revokes(
    live_issuer, user_agent, owner, end_user, settings
):
    from examples.authlib_flask.app import create_app
    from oauthclients.models import AccessToken, RefreshToken

    # The `iss` of authorization responses (RFC 9207) is the live server's, as in a deployment.
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live_issuer}
    redirect_uri = "http://127.0.0.1:5000/callback"
    created = make_client(owner, redirect_uris=[redirect_uri], scopes=["PROFILE_READ"], approve=True)
    app = create_app(
        issuer=live_issuer,
        client_id=created.client.client_id,
        client_secret=created.secret.plaintext,
        redirect_uri=redirect_uri,
    )
    web = app.test_client()

    to_consent = web.get("/login")
    location = allow(user_agent, live_issuer, to_consent.headers["Location"])
    callback = location.replace("http://127.0.0.1:5000", "", 1)
    # A forged answer naming another issuer is refused before any token request.
    forged = web.get(re.sub(r"iss=[^&]+", "iss=https%3A%2F%2Fevil.example", callback))
    assert forged.status_code == 400
    assert web.get(callback).status_code == 302
    assert web.get("/").get_json() == {"signed_in_as": end_user.username}

    # Time passes: the access token expires (on both sides); Authlib refreshes by itself and
    # save_token keeps the rotated pair.
    AccessToken.objects.filter(user=end_user).update(expires=AccessToken.objects.get(user=end_user).created)
    (stored,) = app.extensions["scheduling_tokens"].values()
    old_refresh = stored["refresh_token"]
    stored["expires_at"] = int(time.time()) - 1
    assert web.get("/").get_json() == {"signed_in_as": end_user.username}
    (stored,) = app.extensions["scheduling_tokens"].values()
    assert stored["refresh_token"] != old_refresh
    assert web.get("/").get_json() == {"signed_in_as": end_user.username}  # the saved pair works again

    assert web.get("/logout").get_json() == {"signed_out": True}
    assert not RefreshToken.objects.filter(user=end_user, revoked__isnull=True).exists()
