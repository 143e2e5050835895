"""`manage.py demo_server`: `make run`'s development server. It seeds the demo, then serves, and
prints the demo's summary (URLs, logins, client id, a new secret) after Django's own banner, so
that it is the last thing on the terminal and easy to find.

Seeding runs in the serving process (the autoreloader's child), once per start: a new client
secret is printed the one time it is created and is kept nowhere but as a digest.
"""

from io import StringIO

from django.core.management import call_command
from whitenoise.runserver_nostatic.management.commands.runserver import Command as RunserverCommand


class Command(RunserverCommand):
    help = "Seed the demo (seed_demo), then run the development server; the demo's summary comes last."

    def inner_run(self, *args, **options):
        out = StringIO()
        call_command("seed_demo", stdout=out)
        self.demo_summary = out.getvalue()
        super().inner_run(*args, **options)

    def on_bind(self, server_port):
        super().on_bind(server_port)
        self.stdout.write(getattr(self, "demo_summary", ""))
