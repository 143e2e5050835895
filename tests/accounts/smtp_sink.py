"""A local SMTP sink for the tests: a real socket on 127.0.0.1 speaking just enough SMTP (RFC 5321)
for Django's SMTP backend, without STARTTLS, as a development mail catcher is. It keeps what it
received. With `EMAIL_USE_TLS=1` Django's backend asks for STARTTLS and fails against it, as the
red team's sign-up did (issue 38); with `EMAIL_USE_TLS=0` the mail goes through
(docs/configuration.md)."""

import socketserver
import threading
from contextlib import contextmanager
from email import message_from_bytes


class _Session(socketserver.StreamRequestHandler):
    def _reply(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")
        self.wfile.flush()

    def handle(self) -> None:
        self._reply("220 sink.test ESMTP")
        while True:
            line = self.rfile.readline()
            if not line:
                return
            verb = line.decode(errors="replace").strip().split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self._reply("250 sink.test")  # no extension offered: no STARTTLS, no AUTH
            elif verb in ("MAIL", "RCPT", "RSET", "NOOP"):
                self._reply("250 OK")
            elif verb == "DATA":
                self._reply("354 End data with <CR><LF>.<CR><LF>")
                body = []
                for data in iter(self.rfile.readline, b""):
                    if data == b".\r\n":
                        break
                    body.append(data[1:] if data.startswith(b"..") else data)
                self.server.received.append(message_from_bytes(b"".join(body)))
                self._reply("250 OK: queued")
            elif verb == "QUIT":
                self._reply("221 Bye")
                return
            else:
                self._reply("502 Command not implemented")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Session)
        self.received = []


@contextmanager
def smtp_sink():
    """(port, received messages) of a sink serving until the block ends."""
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], server.received
    finally:
        server.shutdown()
        server.server_close()
