"""WSGI entry point: `gunicorn examples.bookings_service.wsgi` from the repository root."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.bookings_service.settings")

application = get_wsgi_application()


def _migrate() -> None:
    """Create or update this service's own tables, once per start (a lock: several workers start together)."""
    import fcntl

    from django.conf import settings
    from django.core.management import call_command

    with open(settings.OAUTH_BOOKINGS_DATABASE + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        call_command("migrate", verbosity=0, interactive=False)
    # gunicorn --preload forks workers after this: none may inherit the master's SQLite connection.
    from django.db import connections

    connections.close_all()


_migrate()
