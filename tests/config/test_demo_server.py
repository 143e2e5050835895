"""`make run`'s server on `localhost` answers on 127.0.0.1 and on ::1: the printed URL opens whichever
address `localhost` resolves to first (a browser, curl, Node and Python's clients differ in that)."""

import socket
import socketserver
import threading
import urllib.request

import pytest
from django.core.servers.basehttp import WSGIRequestHandler

from config.management.commands.demo_server import Command, LoopbackServer


def hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [f"hello from {environ['SERVER_NAME']}".encode()]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


def serving(server_cls, address):
    server = server_cls(address, QuietHandler)
    server.set_app(hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a loopback URL of the test's
        return response.read()


@pytest.mark.parametrize("threaded", [False, True], ids=["plain", "threaded (runserver's default)"])
def test_on_localhost_it_answers_on_both_loopback_addresses(threaded):
    if not ipv6_loopback_available():
        pytest.skip("this machine has no ::1 to listen on")
    # runserver's threading: django.core.servers.basehttp.run makes this subclass of server_cls.
    server_cls = type("WSGIServer", (socketserver.ThreadingMixIn, LoopbackServer), {}) if threaded else LoopbackServer
    server, thread = serving(server_cls, ("localhost", 0))
    try:
        port = server.server_port
        assert server.twin is not None and server.twin.server_port == port
        assert get(f"http://127.0.0.1:{port}/").startswith(b"hello")
        assert get(f"http://[::1]:{port}/").startswith(b"hello")
    finally:
        server.shutdown()
        server.server_close()
    thread.join(5)
    assert not thread.is_alive()
    with pytest.raises(OSError):
        get(f"http://[::1]:{port}/")  # both sockets closed with the server


def test_on_another_address_it_is_djangos_server():
    server, thread = serving(LoopbackServer, ("127.0.0.1", 0))
    try:
        assert server.twin is None
        assert get(f"http://127.0.0.1:{server.server_port}/").startswith(b"hello")
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_taken_on_either_loopback_address_is_refused():
    if not ipv6_loopback_available():
        pytest.skip("this machine has no ::1 to listen on")
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as other:
        other.bind(("::1", 0))
        other.listen()
        port = other.getsockname()[1]
        # Another server holds [::1]:port: a browser trying ::1 first would reach it, not the demo.
        with pytest.raises(OSError):
            LoopbackServer(("localhost", port), QuietHandler)
    # and 127.0.0.1's socket, bound first, was closed again
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as again:
        again.bind(("127.0.0.1", port))


def test_make_run_uses_it():
    assert Command.server_cls is LoopbackServer
