"""Read config.settings (production settings) in a fresh interpreter with a chosen environment."""

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[3]
OWN_VARIABLES = ("REDIS_URL", "DJANGO_TRUSTED_PROXIES", "RATELIMIT_")


def production_settings(code: str, **env: str) -> dict:
    """Run `code` after django.setup() under config.settings; it must print one JSON value."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith(OWN_VARIABLES)}
    clean.update(
        {"DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_SECRET_KEY": "settings-probe", "DJANGO_DEBUG": "0"},
        **env,
    )
    script = "import django, json\ndjango.setup()\nfrom django.conf import settings\n" + code
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT, env=clean, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
