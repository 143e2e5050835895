"""`manage.py` on a fresh clone: a bad environment is one line naming the variable, not a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


def run_manage(*args, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "OAUTH_", "DATABASE_"))}
    return subprocess.run(
        [sys.executable, str(MANAGE), *args], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("env", "named"),
    [({}, "DJANGO_SECRET_KEY"), ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG")],
    ids=["no-secret-key", "bad-debug"],
)
def test_a_missing_or_bad_variable_is_one_line_naming_it(env, named):
    result = run_manage("oauthclient", "list", **env)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "KeyError" not in result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("manage.py: ") and named in first
    assert "DJANGO_DEBUG=1 .venv/bin/python manage.py" in result.stderr


def test_with_debug_on_the_documented_command_runs(tmp_path):
    result = run_manage("check", DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3")
    assert result.returncode == 0, result.stderr
