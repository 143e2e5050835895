"""`manage.py demo_server`: `make run`'s development server. It seeds the demo, then serves, and
prints the demo's summary (URLs, logins, client id, a new secret) after Django's own banner, so
that it is the last thing on the terminal and easy to find.

Seeding runs in the serving process (the autoreloader's child), once per start: a new client
secret is printed the one time it is created and is kept nowhere but as a digest.

`make run` serves `localhost` (a host name, so that passkeys work: an IP address cannot be a
WebAuthn relying party). Django's runserver would bind the first address `localhost` resolves to
(127.0.0.1) while a browser or a client may try ::1 first; on `localhost` this server listens on
both loopback addresses, so that the printed URL opens either way.
"""

import errno
import threading
from io import StringIO

from django.core.management import call_command
from django.core.servers.basehttp import WSGIServer
from whitenoise.runserver_nostatic.management.commands.runserver import Command as RunserverCommand

LOOPBACK_NAME = "localhost"
# No IPv6 on this machine, or no ::1 on its loopback interface: 127.0.0.1 alone then.
_NO_IPV6 = (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)


class LoopbackServer(WSGIServer):
    """Django's development server, listening on 127.0.0.1 and ::1 (the same port) when asked to
    serve `localhost`; on any other address, exactly as Django's."""

    twin: "LoopbackServer | None" = None
    _twin_serving = False

    def __init__(self, server_address, handler_class, *args, ipv6=False, **kwargs):
        host, port = server_address[:2]
        if host != LOOPBACK_NAME:
            super().__init__(server_address, handler_class, *args, ipv6=ipv6, **kwargs)
            return
        super().__init__(("127.0.0.1", port), handler_class, *args, ipv6=False, **kwargs)
        try:
            # type(self): the threading subclass django.core.servers.basehttp.run made, if any.
            self.twin = type(self)(("::1", self.server_port), handler_class, *args, ipv6=True, **kwargs)
        except OSError as exc:
            if exc.errno not in _NO_IPV6:  # ::1's port taken by another server: say so, as Django would
                self.server_close()
                raise

    def set_app(self, application):
        super().set_app(application)
        if self.twin is not None:
            self.twin.set_app(application)

    def serve_forever(self, *args, **kwargs):
        if self.twin is not None:
            self.twin.daemon_threads = getattr(self, "daemon_threads", False)
            threading.Thread(target=self.twin.serve_forever, name="demo-server-ipv6", daemon=True).start()
            self._twin_serving = True
        super().serve_forever(*args, **kwargs)

    def shutdown(self):
        if self._twin_serving:  # socketserver's shutdown waits for a serve_forever that must have started
            self.twin.shutdown()
        super().shutdown()

    def server_close(self):
        if self.twin is not None:
            self.twin.server_close()
        super().server_close()


class Command(RunserverCommand):
    help = "Seed the demo (seed_demo), then run the development server; the demo's summary comes last."
    server_cls = LoopbackServer

    def inner_run(self, *args, **options):
        out = StringIO()
        call_command("seed_demo", stdout=out)
        self.demo_summary = out.getvalue()
        super().inner_run(*args, **options)

    def on_bind(self, server_port):
        super().on_bind(server_port)
        self.stdout.write(getattr(self, "demo_summary", ""))
