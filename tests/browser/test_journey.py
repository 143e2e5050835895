"""The whole journey in a real browser, against a live server, as the four people live it.

A developer registers a client and copies its one-time secret; an administrator approves it in the
Django admin; an end user logs in, reads the consent screen and clicks Allow; the browser is
redirected to the app's own callback (a tiny HTTP server in this test, on a loopback port), where
the app exchanges the code and calls /v2/me; then the user revokes the app under Connected apps
and its tokens stop working. Each page is saved as a screenshot (tests/browser/conftest.py).

Chromium sends what the Django test client does not (Origin: null and Sec-Fetch-* under
Referrer-Policy: no-referrer, a CSP to obey, a real cross-origin redirect), so this is where those
paths are proved end to end.
"""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.error import HTTPError
from urllib.parse import parse_qsl, urlencode, urlsplit
from urllib.request import ProxyHandler, Request, build_opener

import pytest
from django.conf import settings

from tests.browser.conftest import new_page
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

APP_NAME = "Team Planner"
SCOPES = ["PROFILE_READ", "BOOKING_READ", "ORG_BOOKING_READ"]
STATE = "st-7Qx2"
HTTP_TIMEOUT = 10
# Never through a proxy from the environment: every call here is to a loopback server.
_http = build_opener(ProxyHandler({}))


def call(url: str, *, data: dict | None = None, token: str | None = None) -> tuple[int, dict, object]:
    """GET (or POST a form) and return (status, headers, parsed JSON body)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = None
    if data is not None:
        body = urlencode(data).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        with _http.open(Request(url, data=body, headers=headers), timeout=HTTP_TIMEOUT) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except HTTPError as error:
        with error:
            return error.code, dict(error.headers), json.loads(error.read() or b"null")


class ThirdPartyApp:
    """The app's web server: GET /callback records the query, exchanges the code, calls /v2/me.

    It answers with a small page saying what happened, which the browser shows (and the test
    screenshots). Everything it did is kept in `callbacks` for the test to check.
    """

    def __init__(self, server_url: str):
        self.server_url = server_url
        self.client_id = ""
        self.client_secret = ""
        self.callbacks: list[dict] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.redirect_uri = f"http://127.0.0.1:{self._httpd.server_address[1]}/callback"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def handle_callback(self, query: dict) -> dict:
        done = {"query": query}
        self.callbacks.append(done)
        try:
            if "code" in query:
                status, _headers, tokens = call(
                    self.server_url + settings.OAUTH_TOKEN_PATH,
                    data={
                        "grant_type": "authorization_code",
                        "code": query["code"],
                        "redirect_uri": self.redirect_uri,
                        "client_id": self.client_id,
                        "client_secret": self.client_secret,
                    },
                )
                done.update(token_status=status, tokens=tokens)
                if status == 200:
                    me_status, _headers, me = call(self.server_url + "/v2/me", token=tokens["access_token"])
                    done.update(me_status=me_status, me=me)
        except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in a thread
            done["error"] = repr(exc)
        return done

    def _handler(self):
        app = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                url = urlsplit(self.path)
                if url.path != "/callback":
                    self.send_error(404)
                    return
                done = app.handle_callback(dict(parse_qsl(url.query, keep_blank_values=True)))
                if done.get("me_status") == 200:
                    text = f"Connected as {done['me']['data']['username']}"
                else:
                    text = f"Not connected: {json.dumps({k: v for k, v in done.items() if k != 'query'})}"
                page = f"<!doctype html><title>Team Planner</title><h1>Team Planner</h1><p id=result>{text}</p>"
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler


def log_in(page, username: str) -> None:
    """Fill the login form the page was sent to and submit it (the project's or the admin's)."""
    page.fill("#id_login", username)
    page.fill("#id_password", PASSWORD)
    # The top bar has a "Log out" submit button once logged in: aim at the form in the page body.
    with page.expect_navigation():
        page.click("main button[type=submit], #login-form input[type=submit]")


def test_register_approve_consent_exchange_call_and_revoke(people, live_server, chromium, screenshots):
    base = live_server.url
    with ThirdPartyApp(base) as app:
        # 1. The developer registers the app and copies its one-time secret.
        developer = new_page(chromium)
        developer.goto(base + "/settings/developer/clients/new/")
        assert "/accounts/login/" in developer.url
        screenshots(developer, "developer-login")
        log_in(developer, "developer")
        assert urlsplit(developer.url).path == "/settings/developer/clients/new/"
        screenshots(developer, "register-form")
        developer.fill("input[name=name]", APP_NAME)
        developer.fill("textarea[name=purpose]", "Plans team schedules.")
        developer.fill("input[name=website_url]", "https://planner.example.com")
        developer.fill("textarea[name=redirect_uris]", app.redirect_uri)
        for resource in ("PROFILE", "BOOKING"):  # collapsed until opened
            developer.locator(f"details.scope-resource-box:has(fieldset[data-resource={resource}]) > summary").click()
        for scope in SCOPES:
            developer.check(f"input[name=scopes][value={scope}]")
        with developer.expect_navigation():
            developer.click("main button[type=submit]")
        screenshots(developer, "registered-with-secret")
        assert developer.locator("h1").first.inner_text().startswith(APP_NAME)
        app.client_id = developer.locator("dt:text-is('Client ID') + dd code").inner_text().strip()
        app.client_secret = developer.input_value("#new-secret")
        assert re.fullmatch(r"cs_[A-Za-z0-9_-]{43}", app.client_secret), app.client_secret
        assert "Pending review." in developer.inner_text("main")

        # 2. The administrator approves it in the Django admin.
        admin = new_page(chromium, width=1280)
        admin.goto(base + "/admin/oauthclients/oauthclient/")
        screenshots(admin, "admin-login")
        log_in(admin, "admin")
        screenshots(admin, "admin-pending-clients")
        admin.check(f"#result_list tr:has-text('{APP_NAME}') input[name=_selected_action]")
        admin.select_option("select[name=action]", label="Approve selected clients")
        with admin.expect_navigation():
            admin.click("button[name=index]")
        # The confirmation shows everything approval covers; confirming approves that version.
        screenshots(admin, "admin-approve-clients-confirm")
        assert app.redirect_uri in admin.inner_text(".review-summary")
        with admin.expect_navigation():
            admin.get_by_role("button", name="Approve 1 client").click()
        screenshots(admin, "admin-approved")
        assert "Approved 1 client." in admin.inner_text(".messagelist")

        # 3. The end user follows the app's authorization link, logs in and reads the consent screen.
        user = new_page(chromium, width=390, height=844)  # a phone
        query = urlencode(
            {"client_id": app.client_id, "redirect_uri": app.redirect_uri, "scope": " ".join(SCOPES), "state": STATE}
        )
        user.goto(f"{base}{settings.OAUTH_AUTHORIZE_PATH}?{query}")
        assert "/accounts/login/" in user.url
        screenshots(user, "enduser-login")
        log_in(user, "enduser")
        screenshots(user, "consent")
        consent = user.locator("main .consent")
        assert f"{APP_NAME} wants to access your scheduling account" in consent.locator("h1").inner_text()
        # By resource, the organization-wide one first; descriptions open on demand.
        assert consent.locator(".resource-name").all_inner_texts() == ["Bookings", "Profile"]
        bookings = consent.locator("ul.resources > li").first
        bookings.locator("summary").click()
        assert sorted(bookings.locator(".scope-details li > .muted code").all_inner_texts()) == [
            "BOOKING_READ",
            "ORG_BOOKING_READ",
        ]
        implied = bookings.locator(".help").inner_text()
        assert "Also grants the team access" in implied and "TEAM_BOOKING_READ" in implied
        assert "127.0.0.1" in consent.inner_text()  # where the user will be sent back to

        # 4. Allow: a real redirect to the app's callback, which exchanges the code and calls the API.
        with user.expect_navigation(url=re.compile(re.escape(app.redirect_uri) + r"\?")):
            user.get_by_role("button", name="Allow", exact=True).click()
        screenshots(user, "app-callback")
        assert len(app.callbacks) == 1, app.callbacks
        done = app.callbacks[0]
        assert "error" not in done, done
        assert done["query"]["state"] == STATE and done["query"]["iss"] == settings.OAUTH_ISSUER
        assert done["token_status"] == 200, done
        tokens = done["tokens"]
        assert set(tokens["scope"].split()) == set(SCOPES)
        assert done["me_status"] == 200 and done["me"]["data"]["username"] == "enduser", done
        assert user.inner_text("#result") == "Connected as enduser"

        # 5. The user revokes the app under Connected apps; its tokens stop working at once.
        user.goto(base + "/settings/apps/")
        screenshots(user, "connected-apps")
        card = user.locator("section.card").filter(has=user.get_by_role("heading", name=APP_NAME))
        # Grouped by resource, as on the consent page (and the same order: higher risk first).
        from scopes.catalog import group_by_resource

        expected = [resource.label for resource in group_by_resource(sorted(SCOPES))]
        assert card.locator(".resource-name").all_inner_texts() == expected
        with user.expect_navigation():
            card.get_by_role("link", name="Revoke access…").click()
        screenshots(user, "revoke-confirm")
        assert f"Revoke access for {APP_NAME}?" in user.inner_text("main h1")
        with user.expect_navigation():
            user.locator("main").get_by_role("button", name="Revoke access", exact=True).click()
        screenshots(user, "revoked")
        assert urlsplit(user.url).path == "/settings/apps/"
        assert f"{APP_NAME} no longer has access to your account." in user.inner_text("main")
        assert "No application has access to your account." in user.inner_text("main")

    status, headers, body = call(base + "/v2/me", token=tokens["access_token"])
    assert status == 401, (status, body)
    assert 'error="invalid_token"' in headers["WWW-Authenticate"]
    status, _headers, body = call(
        base + settings.OAUTH_TOKEN_PATH,
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": app.client_id,
            "client_secret": app.client_secret,
        },
    )
    assert (status, body["error"]) == (400, "invalid_grant")
