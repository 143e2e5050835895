"""The database settings read from the environment (config.settings): health check and binding."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRINT = (
    "import django; django.setup(); from django.conf import settings; d = settings.DATABASES['default']; "
    "print(d['ENGINE'], d['CONN_HEALTH_CHECKS'], d['HEALTH_CHECK'], d.get('OPTIONS', {}).get('server_side_binding'), "
    "d.get('OPTIONS', {}).get('prepare_threshold'))"
)


def settings_with(**env) -> subprocess.CompletedProcess:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "DJANGO_"))},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/test",
        "DJANGO_DEBUG": "1",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", PRINT], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "plumbing.postgresql True poll True 1"),
        ({"DATABASE_HEALTH_CHECK": "ping"}, "plumbing.postgresql True ping True 1"),
        ({"DATABASE_HEALTH_CHECK": "off"}, "plumbing.postgresql False off True 1"),
        ({"DATABASE_SERVER_SIDE_BINDING": "0"}, "plumbing.postgresql True poll None None"),
        ({"DATABASE_PREPARE_THRESHOLD": "5"}, "plumbing.postgresql True poll True 5"),
        # Binding kept, preparing off: for PgBouncer in transaction mode before 1.22.
        ({"DATABASE_PREPARE_THRESHOLD": "off"}, "plumbing.postgresql True poll True None"),
    ],
)
def test_postgresql_settings(env, expected):
    result = settings_with(**env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_an_unknown_health_check_is_refused_by_name():
    result = settings_with(DATABASE_HEALTH_CHECK="sometimes")
    assert result.returncode != 0
    assert "DATABASE_HEALTH_CHECK must be poll, ping or off" in result.stderr


def test_a_prepare_threshold_that_is_neither_a_number_nor_off_is_refused():
    result = settings_with(DATABASE_PREPARE_THRESHOLD="sometimes")
    assert result.returncode != 0
    assert "DATABASE_PREPARE_THRESHOLD" in result.stderr
