"""Client ID metadata documents (docs/agents.md): a client_id that is a URL is fetched, safely.

The documents are served by a real HTTP server on loopback (allowed only under
OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK); every refusal is an error page (400) without a redirect,
and comes quickly.
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

import pytest
from django.core.cache import cache

from oauthclients.models import ClientStatus, OAuthClient
from tests.oauthflows.helpers import METADATA, consent_form, exchange, pkce_pair, query_of

REDIRECT = "http://127.0.0.1:33419/callback"


class DocumentServer:
    """Answers every GET with what the test set: status, headers, body, and a delay."""

    def __init__(self):
        self.status, self.headers, self.body, self.delay, self.hits = 200, {}, b"", 0.0, 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                outer.hits += 1
                time.sleep(outer.delay)
                try:
                    self.send_response(outer.status)
                    for name, value in {"Content-Type": "application/json", **outer.headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(outer.body)))
                    self.end_headers()
                    self.wfile.write(outer.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/agent.json"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def serve(self, document: dict | bytes, **kwargs):
        self.body = document if isinstance(document, bytes) else json.dumps(document).encode()
        for key, value in kwargs.items():
            setattr(self, key, value)


@pytest.fixture
def documents(settings):
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    cache.clear()  # DOT's failure backoff
    server = DocumentServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()
    cache.clear()


def agent_document(url: str, **extra) -> dict:
    return {
        "client_id": url,
        "client_name": "Inspector Agent",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **extra,
    }


def authorize(browser, client_id: str, **extra):
    params = {
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": "PROFILE_READ",
        "state": "s1",
        "code_challenge": extra.pop("challenge", pkce_pair()[1]),
        "code_challenge_method": "S256",
        **extra,
    }
    return browser.get("/auth/oauth2/authorize?" + urlencode(params))


def assert_refused_page(response, *phrases):
    assert response.status_code == 400, response.content[:300]
    assert "Location" not in response
    text = response.content.decode()
    for phrase in phrases:
        assert phrase in text, text[:2000]
    return text


def test_the_metadata_says_documents_are_supported(api, db):
    assert api.get(METADATA).json()["client_id_metadata_document_supported"] is True


def test_a_document_client_is_registered_unverified_and_completes_the_flow(browser, api, documents):
    documents.serve(agent_document(documents.url), headers={"Cache-Control": "max-age=600"})
    verifier, challenge = pkce_pair()
    page = authorize(browser, documents.url, challenge=challenge, prompt="consent")
    assert page.status_code == 200, page.content[:500]
    html = page.content.decode()
    assert "Inspector Agent" in html and "Unverified app" in html
    assert f"127.0.0.1:{documents.httpd.server_port}" in html  # the document's host
    client = OAuthClient.objects.get(client_id=documents.url)
    assert client.status == ClientStatus.UNVERIFIED
    assert client.registration_source == OAuthClient.RegistrationSource.CIMD
    assert client.client_type == "public" and client.cimd_expires_at is not None
    # Cached: the login-gated second validation does not fetch again.
    hits = documents.hits
    allowed = browser.post(
        "/auth/oauth2/authorize/allow?" + page.request["QUERY_STRING"],  # the same request the page was shown for
        consent_form(html),
    )
    assert allowed.status_code == 302, allowed.content[:300]
    assert documents.hits == hits
    code = query_of(allowed["Location"])["code"]
    response = exchange(api, client, code, verifier=verifier)
    assert response.status_code == 200, response.content
    assert response.json()["scope"] == "PROFILE_READ"


def test_loopback_documents_are_not_fetched_without_the_setting(browser, documents, settings):
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = False
    documents.serve(agent_document(documents.url))
    assert_refused_page(authorize(browser, documents.url), "Unknown application")
    assert documents.hits == 0


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/agent.json",
        "https://10.1.2.3/agent.json",
        "https://192.168.0.10/agent.json",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/agent.json",
        "https://[fd00::1]/agent.json",
        "https://[fe80::1]/agent.json",
        "https://[::ffff:10.0.0.1]/agent.json",
        "https://224.0.0.1/agent.json",
        "https://0.0.0.0/agent.json",
    ],
)
def test_non_public_addresses_are_refused_without_a_connection(browser, db, url):
    cache.clear()
    started = time.monotonic()
    assert_refused_page(authorize(browser, url), "Client metadata document refused", "non-public address")
    assert time.monotonic() - started < 2
    assert not OAuthClient.objects.filter(client_id=url).exists()


def test_a_name_that_resolves_to_a_private_address_is_refused(browser, db, monkeypatch):
    cache.clear()

    def resolve(host, port, *args, **kwargs):
        assert host == "agent.example.com"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", port))]

    monkeypatch.setattr("oauth2_provider.cimd.socket.getaddrinfo", resolve)
    assert_refused_page(authorize(browser, "https://agent.example.com/agent.json"), "non-public address (10.0.0.5)")


def test_a_name_with_one_private_address_among_public_ones_is_refused(browser, db, monkeypatch):
    cache.clear()
    answers = [("93.184.216.34", 443), ("fd12::1", 443, 0, 0)]
    monkeypatch.setattr(
        "oauth2_provider.cimd.socket.getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", sockaddr) for sockaddr in answers],
    )
    assert_refused_page(authorize(browser, "https://agent.example.com/agent.json"), "non-public address (fd12::1)")


def test_plain_http_off_loopback_is_not_a_document(browser, db, settings):
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    assert_refused_page(authorize(browser, "http://agent.example.com/agent.json"), "Unknown application")


def test_redirects_are_not_followed(browser, documents):
    documents.serve(b"", status=302, headers={"Location": "http://127.0.0.1:1/elsewhere"})
    assert_refused_page(authorize(browser, documents.url), "HTTP 302")
    assert documents.hits == 1


def test_an_oversize_document_is_refused(browser, documents):
    documents.serve(agent_document(documents.url, client_uri="https://example.com/" + "a" * 6000))
    assert_refused_page(authorize(browser, documents.url), "maximum allowed size")


def test_a_slow_document_is_given_up_on_time(browser, documents, settings):
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": 1}
    documents.serve(agent_document(documents.url), delay=3)
    started = time.monotonic()
    assert_refused_page(authorize(browser, documents.url), "could not fetch")
    assert time.monotonic() - started < 2.5


def test_a_document_naming_another_client_id_is_refused(browser, documents):
    documents.serve(agent_document("https://other.example.com/agent.json"))
    assert_refused_page(authorize(browser, documents.url), "not the URL it was fetched from")
    assert not OAuthClient.objects.exists()


@pytest.mark.parametrize(
    "extra, phrase",
    [
        ({"token_endpoint_auth_method": "client_secret_basic"}, "public"),
        ({"client_secret": "s"}, "client secret"),
        ({"redirect_uris": ["http://example.com/cb"]}, "must use https"),
        ({"scope": "NOT_A_SCOPE"}, "scope"),
        ({"client_name": "A\r\nB"}, "client_name"),
    ],
)
def test_invalid_document_metadata_is_refused(browser, documents, extra, phrase):
    documents.serve(agent_document(documents.url, **extra))
    assert_refused_page(authorize(browser, documents.url), phrase)
    assert not OAuthClient.objects.exists()


def test_a_document_that_is_not_json_is_refused(browser, documents):
    documents.serve(b"<html>hi</html>", headers={"Content-Type": "text/html"})
    assert_refused_page(authorize(browser, documents.url), "not JSON")


def test_a_redirect_uri_the_document_does_not_list_is_refused_without_redirect(browser, documents):
    documents.serve(agent_document(documents.url, redirect_uris=["http://127.0.0.1:40000/other"]))
    assert_refused_page(authorize(browser, documents.url), "Redirect URI not registered")


def test_a_failure_backs_off_without_fetching_again(browser, documents):
    documents.serve(b"nope", status=500)
    assert_refused_page(authorize(browser, documents.url), "HTTP 500")
    documents.serve(agent_document(documents.url), status=200)
    assert_refused_page(authorize(browser, documents.url), "try again in a minute")
    assert documents.hits == 1


def test_a_stale_document_is_fetched_again_and_followed(browser, documents):
    documents.serve(agent_document(documents.url), headers={"Cache-Control": "no-store"})
    assert authorize(browser, documents.url).status_code == 200
    OAuthClient.objects.filter(client_id=documents.url).update(cimd_expires_at=None)
    documents.serve(agent_document(documents.url, client_name="Renamed Agent"))
    assert authorize(browser, documents.url).status_code == 200
    assert OAuthClient.objects.get(client_id=documents.url).name == "Renamed Agent"


def test_beyond_the_ceiling_is_invalid_scope(browser, documents):
    documents.serve(agent_document(documents.url, scope="PROFILE_READ BOOKING_WRITE"))
    response = authorize(browser, documents.url, scope="BOOKING_WRITE")
    # Before its consent page an unverified client's redirect URI gets nobody (RFC 9700 §4.11.2):
    # the error is told on our page (tests/oauthflows/test_untrusted_redirects.py).
    assert response.status_code == 400 and not response.has_header("Location")
    assert "invalid_scope" in response.content.decode()


def test_no_documents_when_registration_is_off(browser, documents, settings):
    settings.OAUTH_DYNAMIC_REGISTRATION = "off"
    documents.serve(agent_document(documents.url))
    assert_refused_page(authorize(browser, documents.url), "Unknown application")
    assert documents.hits == 0
