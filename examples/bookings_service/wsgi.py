"""WSGI entry point: `gunicorn examples.bookings_service.wsgi` from the repository root."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.bookings_service.settings")

application = get_wsgi_application()
