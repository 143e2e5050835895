"""One deadline for a whole metadata-document fetch, and a server-wide bound on fetches in flight
(issue 28, High 1; oauthflows/registration/cimd.py, plumbing/slots.py).

The attacker's document server is a real socket server on loopback that drips its answer one byte
a second: the status line and headers, the body, or (through a dripping proxy in front of a TLS
server) the TLS handshake itself. DOT's per-read timeout never fires against it (each byte comes
within it); only the deadline ends the fetch, with the 400 page, and the failure backs off.
"""

import datetime
import json
import socket
import ssl
import threading
import time
from urllib.parse import urlencode

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.core.cache import cache

from oauthclients.models import OAuthClient
from plumbing.slots import slot_taken, slots_in_use
from tests.oauthflows.helpers import pkce_pair

REDIRECT = "http://127.0.0.1:33419/callback"
DEADLINE = 2  # CIMD_FETCH_TIMEOUT_SECONDS in these tests
DRIP = 1.0  # seconds between two bytes: well within DOT's per-read timeout
# The page must come within the deadline and this much more (a request, a page, a loaded machine);
# without the deadline a drip of these documents lasts minutes.
SLACK = 3
TLS_HOST = "agent.test"


def document(url: str) -> bytes:
    return json.dumps(
        {
            "client_id": url,
            "client_name": "Drip Agent",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
        }
    ).encode()


def http_answer(body: bytes, *, length: bool = True) -> bytes:
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
    if length:
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


class DripServer:
    """Answers each connection with `answer()`: the first `fast` bytes at once, then one byte every
    DRIP seconds. `tls`: an ssl server context to wrap each connection in first. `upstream`: instead
    of answering, relay to that (host, port), dripping what comes back (the TLS handshake too).
    Records how many fetch slots were in use when each connection arrived."""

    def __init__(self, *, answer=None, fast: int = 0, tls: ssl.SSLContext | None = None, upstream=None):
        self.answer, self.fast, self.tls, self.upstream = answer, fast, tls, upstream
        self.hits, self.slots_seen, self.stopped = 0, [], threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.hits += 1
            self.slots_seen.append(slots_in_use(pool="cimd-fetch", size=10))
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            if self.upstream:
                self._relay(conn)
                return
            if self.tls:
                conn = self.tls.wrap_socket(conn, server_side=True)
            conn.recv(65536)  # the request
            data = self.answer()
            conn.sendall(data[: self.fast])
            self._drip(conn, data[self.fast :])
        except OSError:
            pass  # the fetcher hung up: what we want
        finally:
            conn.close()

    def _drip(self, conn, data: bytes):
        for index in range(len(data)):
            if self.stopped.wait(DRIP):
                return
            conn.sendall(data[index : index + 1])

    def _relay(self, conn):
        upstream = socket.create_connection(self.upstream)

        def forward():  # the client's bytes go up at once
            try:
                while chunk := conn.recv(65536):
                    upstream.sendall(chunk)
            except OSError:
                pass

        threading.Thread(target=forward, daemon=True).start()
        try:
            while chunk := upstream.recv(65536):
                self._drip(conn, chunk)
                if self.stopped.is_set():
                    return
        finally:
            upstream.close()

    def stop(self):
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def drips(settings):
    settings.OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK = True
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": DEADLINE}
    cache.clear()  # the failure backoff and the fetch slots
    servers = []

    def start(**kwargs) -> DripServer:
        server = DripServer(**kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    cache.clear()


def authorize(browser, client_id: str):
    params = {
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": "PROFILE_READ",
        "state": "s1",
        "code_challenge": pkce_pair()[1],
        "code_challenge_method": "S256",
    }
    started = time.monotonic()
    response = browser.get("/auth/oauth2/authorize?" + urlencode(params))
    return response, time.monotonic() - started


def assert_refused_page(response, *phrases):
    assert response.status_code == 400, response.content[:300]
    assert "Location" not in response
    text = response.content.decode()
    for phrase in phrases:
        assert phrase in text, text[:2000]


def test_a_body_dripped_a_byte_a_second_is_given_up_at_the_deadline_and_backs_off(browser, db, drips):
    url_holder = {}
    server = drips(answer=lambda: http_answer(document(url_holder["url"])), fast=120)
    url = url_holder["url"] = f"http://127.0.0.1:{server.port}/agent.json"
    response, took = authorize(browser, url)
    assert_refused_page(response, "Client metadata document refused", f"within {DEADLINE} s")
    assert DEADLINE - 0.2 < took < DEADLINE + SLACK
    assert not OAuthClient.objects.filter(client_id=url).exists()
    # The failure is recorded: the next try is refused at once, without a fetch.
    response, took = authorize(browser, url)
    assert_refused_page(response, "try again in a minute")
    assert took < 1 and server.hits == 1
    assert slots_in_use(pool="cimd-fetch", size=10) == 0  # the slot was given back


def test_headers_dripped_a_byte_a_second_are_given_up_at_the_deadline(browser, db, drips):
    server = drips(answer=lambda: http_answer(b"{}"), fast=0)
    response, took = authorize(browser, f"http://127.0.0.1:{server.port}/agent.json")
    assert_refused_page(response, f"within {DEADLINE} s")
    assert took < DEADLINE + SLACK


def test_a_close_delimited_body_cut_by_the_deadline_is_refused_even_if_it_parses(browser, db, drips):
    # The whole document at once, then whitespace a byte a second with no Content-Length: at the
    # deadline the stream ends early and what was read is valid JSON. Still a refusal.
    url_holder = {}
    server = drips(answer=lambda: http_answer(document(url_holder["url"]) + b" " * 100, length=False))
    url = url_holder["url"] = f"http://127.0.0.1:{server.port}/agent.json"
    server.fast = len(http_answer(document(url), length=False))
    response, took = authorize(browser, url)
    assert_refused_page(response, f"within {DEADLINE} s")
    assert took < DEADLINE + SLACK
    assert not OAuthClient.objects.filter(client_id=url).exists()


def test_a_document_that_arrives_slowly_but_within_the_deadline_is_used(browser, db, drips):
    url_holder = {}
    server = drips(answer=lambda: http_answer(document(url_holder["url"])), fast=0)
    url = url_holder["url"] = f"http://127.0.0.1:{server.port}/agent.json"
    server.fast = len(http_answer(document(url))) - 1  # the last byte after one drip
    response, took = authorize(browser, url)
    assert response.status_code == 200, response.content[:500]
    assert DRIP - 0.2 < took < DEADLINE + SLACK
    assert OAuthClient.objects.filter(client_id=url).exists()
    assert server.slots_seen == [1]  # the fetch held a slot while it ran
    assert slots_in_use(pool="cimd-fetch", size=10) == 0


def test_past_the_cap_of_fetches_in_flight_the_page_says_try_again_at_once(browser, db, drips, settings):
    settings.OAUTH_CLIENT_METADATA_MAX_FETCHES = 1
    url_holder = {}
    server = drips(answer=lambda: http_answer(document(url_holder["url"])), fast=10_000)
    url = url_holder["url"] = f"http://127.0.0.1:{server.port}/agent.json"
    # Another fetch, in this process or any other, holds the only slot.
    with slot_taken(pool="cimd-fetch", size=1, lifetime=30) as taken:
        assert taken
        response, took = authorize(browser, url)
        assert_refused_page(response, "Too many client ID metadata documents", "try again")
        assert took < 1 and server.hits == 0
    # Not a failure of the document: no backoff, it is fetched once a slot is free.
    response, _ = authorize(browser, url)
    assert response.status_code == 200, response.content[:500]
    assert server.hits == 1


# --- https: DOT's own fetch path, under the same deadline -----------------------------------------


@pytest.fixture
def tls_server_context(tmp_path, monkeypatch):
    """A certificate for agent.test that the fetcher trusts (SSL_CERT_FILE), and agent.test resolving
    to loopback as if it were public: DOT's fetch code itself runs, SNI and verification included."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, TLS_HOST)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(TLS_HOST)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))
    real_getaddrinfo = socket.getaddrinfo

    def resolve(host, port, *args, **kwargs):
        if host == TLS_HOST:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr("oauth2_provider.cimd.socket.getaddrinfo", resolve)
    monkeypatch.setattr("oauth2_provider.cimd._ip_is_public", lambda ip: ip == "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context


def test_the_https_fetch_works_under_the_deadline(browser, db, drips, tls_server_context):
    url_holder = {}
    server = drips(answer=lambda: http_answer(document(url_holder["url"])), fast=10_000, tls=tls_server_context)
    url = url_holder["url"] = f"https://{TLS_HOST}:{server.port}/agent.json"
    response, _ = authorize(browser, url)
    assert response.status_code == 200, response.content[:500]


def test_an_https_body_dripped_a_byte_a_second_is_given_up_at_the_deadline(browser, db, drips, tls_server_context):
    url_holder = {}
    server = drips(answer=lambda: http_answer(document(url_holder["url"])), fast=120, tls=tls_server_context)
    url = url_holder["url"] = f"https://{TLS_HOST}:{server.port}/agent.json"
    response, took = authorize(browser, url)
    assert_refused_page(response, f"within {DEADLINE} s")
    assert DEADLINE - 0.2 < took < DEADLINE + SLACK


def test_a_tls_handshake_dripped_a_byte_a_second_is_given_up_at_the_deadline(browser, db, drips, tls_server_context):
    url_holder = {}
    tls = drips(answer=lambda: http_answer(document(url_holder["url"])), fast=10_000, tls=tls_server_context)
    proxy = drips(upstream=("127.0.0.1", tls.port))
    url = url_holder["url"] = f"https://{TLS_HOST}:{proxy.port}/agent.json"
    response, took = authorize(browser, url)
    assert_refused_page(response, f"within {DEADLINE} s")
    assert took < DEADLINE + SLACK
