#!/usr/bin/env python
"""The example resource server's manage.py: run it from the repository root.

.venv/bin/python examples/bookings_service/manage.py runserver 127.0.0.1:8001
"""

import os
import sys
from pathlib import Path

# The repository root, so that `scopes` (the only package of this repository it uses) imports.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.bookings_service.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
