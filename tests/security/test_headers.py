"""SECURITY.md, "Consent page", for every HTML page: framing refused, no referrer, no sniffing,
a Content-Security-Policy the pages actually work under, no third-party subresources; and HSTS
plus Secure/HttpOnly cookies when HTTPS is required.
"""

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from tests.factories import PASSWORD, make_client
from tests.oauthclients.pages import url
from tests.oauthflows.helpers import authorize_url
from tests.security.credentials import logged_in

BASE_DIR = Path(__file__).resolve().parents[2]
ORIGIN = "http://testserver"
# Attributes that make a browser fetch something or send the user somewhere.
URL_ATTRIBUTES = {"src", "href", "action", "formaction", "srcset", "poster", "data", "manifest"}


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.inline: list[str] = []  # what a CSP without 'unsafe-inline' would block
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name, value in attrs:
            if name in URL_ATTRIBUTES and value:
                self.urls.append((tag, name, value))
            if name == "style" or name.startswith("on"):
                self.inline.append(f"<{tag} {name}=...>")
        if tag == "style":
            self.inline.append("<style> block")
        if tag == "script" and "src" not in attributes and attributes.get("type") != "application/json":
            self.inline.append("inline <script>")
        if tag == "meta" and attributes.get("http-equiv", "").lower() == "refresh":
            self.urls.append((tag, "content", attributes.get("content", "")))


def parse(response) -> _Page:
    page = _Page()
    page.feed(response.content.decode())
    return page


def off_site(response, *, allowed=()) -> list[tuple[str, str, str]]:
    """Links and subresources that point to another origin (or to javascript:/data:)."""
    base = ORIGIN + response.wsgi_request.get_full_path()
    found = []
    for tag, attribute, value in parse(response).urls:
        for candidate in value.split(",") if attribute == "srcset" else [value]:
            target = urljoin(base, candidate.strip().split(" ")[0])
            parts = urlsplit(target)
            if parts.scheme in ("javascript", "data", "vbscript") or (
                f"{parts.scheme}://{parts.netloc}" != ORIGIN and target not in allowed
            ):
                found.append((tag, attribute, value))
    return found


def csp_directives(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}


def assert_hardened_html(response, *, status=200, allowed_links=()):
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("text/html")
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "no-referrer"
    assert response["X-Content-Type-Options"] == "nosniff"
    directives = csp_directives(response)
    assert directives["frame-ancestors"] == ["'none'"]
    assert directives["default-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["base-uri"] == ["'none'"]
    # Chrome applies form-action to the consent POST's redirect to the client (another origin).
    assert "form-action" not in directives
    assert not any("unsafe" in source for sources in directives.values() for source in sources)
    # The policy has no 'unsafe-inline', so a page that relied on inline code would break.
    assert parse(response).inline == []
    assert off_site(response, allowed=allowed_links) == []


@pytest.fixture
def confidential_client(owner):
    return make_client(owner, scopes=["PROFILE_READ", "BOOKING_READ", "ORG_PROFILE_READ"], approve=True).client


def test_the_login_page(client, db):
    assert_hardened_html(client.get(reverse("login")))
    assert_hardened_html(client.post(reverse("login"), {"username": "nobody", "password": "wrong"}))


def test_the_consent_page_allows_only_the_clients_own_website_link(end_user, confidential_client):
    response = logged_in(end_user).get(authorize_url(confidential_client, scope="PROFILE_READ ORG_PROFILE_READ"))

    assert_hardened_html(response, allowed_links=[confidential_client.website_url])
    assert ("a", "href", confidential_client.website_url) in parse(response).urls


def test_the_consent_page_with_a_website_link_is_still_caught_by_the_scan(end_user, confidential_client):
    # The scan must see the client's link as off-site when it is not explicitly allowed.
    response = logged_in(end_user).get(authorize_url(confidential_client))

    assert off_site(response) == [("a", "href", confidential_client.website_url)]


def test_the_authorization_error_page(end_user):
    response = logged_in(end_user).get("/auth/oauth2/authorize?client_id=nope&redirect_uri=https://evil.example/")
    assert_hardened_html(response, status=400)
    assert "evil.example" not in response.content.decode()


def test_the_not_found_page(client, db):
    assert_hardened_html(client.get("/no/such/page"), status=404)


def test_the_developer_pages(owner, confidential_client):
    developer = logged_in(owner)
    assert_hardened_html(developer.get(url("client_list")))
    assert_hardened_html(developer.get(url("client_create")))
    assert_hardened_html(developer.get(url("client_update", confidential_client)))
    detail = developer.get(url("client_detail", confidential_client))
    # The page names the client's own website and redirect URIs as links or text; nothing loads.
    assert_hardened_html(detail, allowed_links=[confidential_client.website_url])
    created = developer.post(url("client_secret_create", confidential_client))
    assert created.status_code == 303
    new_secret = developer.get(created["Location"])
    assert new_secret.context["new_secret"] is not None
    assert_hardened_html(new_secret, allowed_links=[confidential_client.website_url])


@pytest.mark.parametrize(
    "path",
    [
        "/admin/",
        "/admin/oauthclients/oauthclient/",
        "/admin/oauthclients/oauthclient/add/",
        "/admin/oauthclients/clientauditevent/",
        "/admin/auth/user/",
        "/admin/auth/user/add/",
        "/admin/password_change/",
    ],
)
def test_every_admin_page_is_served_hardened(reviewer, path):
    assert_hardened_html(logged_in(reviewer).get(path))


def test_the_admin_change_page_of_a_client_and_its_login_page(client, reviewer, confidential_client):
    # The admin's login is the one login page (allauth's secure_admin_login).
    to_login = client.get("/admin/login/")
    assert to_login.status_code == 302 and to_login["Location"].startswith("/accounts/login/?next=")
    assert_hardened_html(client.get(to_login["Location"]))
    change = reverse("admin:oauthclients_oauthclient_change", args=[confidential_client.pk])
    assert_hardened_html(logged_in(reviewer).get(change), allowed_links=[confidential_client.website_url])


def test_json_endpoints_are_not_framable_or_sniffable_either(client, db):
    for response in (client.get("/v2/me"), client.post("/v2/auth/oauth2/token", {})):
        assert response["X-Content-Type-Options"] == "nosniff"
        assert csp_directives(response)["frame-ancestors"] == ["'none'"]


# --- HTTPS required: settings are read from the environment at import, so build them afresh ---


def settings_built_with(**env) -> dict:
    script = (
        "import json, django\n"
        "from django.conf import settings\n"
        "names = ['SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', 'SESSION_COOKIE_SECURE',\n"
        "         'CSRF_COOKIE_SECURE', 'SESSION_COOKIE_HTTPONLY', 'SECURE_SSL_REDIRECT', 'MIDDLEWARE']\n"
        "print(json.dumps({name: getattr(settings, name) for name in names}))\n"
    )
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "OAUTH_"))}
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", **env)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=BASE_DIR, env=clean, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


HTTPS_SETTINGS = [
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SESSION_COOKIE_HTTPONLY",
    "SECURE_SSL_REDIRECT",
]


def test_production_settings_require_https_by_default():
    built = settings_built_with(DJANGO_SECRET_KEY="x" * 50)

    assert built["SECURE_HSTS_SECONDS"] >= 31536000
    assert built["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert built["SESSION_COOKIE_SECURE"] is built["CSRF_COOKIE_SECURE"] is True
    assert built["SESSION_COOKIE_HTTPONLY"] is True
    assert built["SECURE_SSL_REDIRECT"] is True
    assert "plumbing.securityheaders.ContentSecurityPolicyMiddleware" in built["MIDDLEWARE"]


def test_hsts_can_be_shorter_or_off_with_https_still_required():
    assert settings_built_with(DJANGO_SECRET_KEY="x" * 50, DJANGO_HSTS_SECONDS="3600")["SECURE_HSTS_SECONDS"] == 3600
    off = settings_built_with(DJANGO_SECRET_KEY="x" * 50, DJANGO_HSTS_SECONDS="0")
    assert off["SECURE_HSTS_SECONDS"] == 0
    assert off["SESSION_COOKIE_SECURE"] is off["CSRF_COOKIE_SECURE"] is off["SECURE_SSL_REDIRECT"] is True


def test_plain_http_on_loopback_has_no_hsts_and_no_secure_cookies():
    built = settings_built_with(DJANGO_SECRET_KEY="x" * 50, DJANGO_REQUIRE_HTTPS="0")

    assert built["SECURE_HSTS_SECONDS"] == 0
    assert built["SESSION_COOKIE_SECURE"] is built["CSRF_COOKIE_SECURE"] is False
    assert built["SECURE_SSL_REDIRECT"] is False


def test_with_https_required_pages_send_hsts_and_cookies_are_secure_and_httponly(end_user, confidential_client):
    built = settings_built_with(DJANGO_SECRET_KEY="x" * 50, DJANGO_REQUIRE_HTTPS="1")
    with override_settings(**{name: built[name] for name in HTTPS_SETTINGS}):
        browser = Client()

        plain = browser.get("/accounts/login/")
        assert plain.status_code == 301 and plain["Location"].startswith("https://")
        login_page = browser.get("/accounts/login/", secure=True)
        assert_hardened_html(login_page)
        assert login_page["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
        assert browser.cookies["csrftoken"]["secure"]

        response = browser.post("/accounts/login/", {"username": end_user.username, "password": PASSWORD}, secure=True)
        assert response.status_code == 302
        session = browser.cookies["sessionid"]
        assert session["secure"] and session["httponly"]
        consent = browser.get(authorize_url(confidential_client), secure=True)
        assert_hardened_html(consent, allowed_links=[confidential_client.website_url])
        assert "max-age=31536000" in consent["Strict-Transport-Security"]
