#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        from django.conf import settings

        settings.INSTALLED_APPS  # noqa: B018 - load the settings now, to report a bad environment in one line
    except ImproperlyConfigured as exc:
        sys.exit(
            f"manage.py: {exc}.\n"
            "Locally, run it as `DJANGO_DEBUG=1 .venv/bin/python manage.py …` (what `make run` does); "
            "on a server, set the variables in the docs/configuration.md."
        )
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
