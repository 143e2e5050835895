"""`make run PORT=…` serves one consistent server: every command it runs sees the same issuer, on
localhost by default (an IP address cannot be a WebAuthn relying party: passkeys need a host name)."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Stands in for the virtualenv's python: prints what the real one would be given.
FAKE_PYTHON = """#!/bin/sh
echo "OAUTH_ISSUER=$OAUTH_ISSUER DJANGO_DEBUG=$DJANGO_DEBUG ARGS=$*"
"""


def make_run(tmp_path, *args, env=None) -> list[str]:
    """Run the real `run` recipe with a fake python (nothing installed, migrated or served)."""
    (tmp_path / "python").write_text(FAKE_PYTHON)
    (tmp_path / "python").chmod(stat.S_IRWXU)
    # A stamp newer than pyproject.toml, so that make installs nothing (whatever the checkout's mtimes).
    stamp = tmp_path / "installed-stamp"
    stamp.touch()
    environment = {k: v for k, v in os.environ.items() if k not in ("OAUTH_ISSUER", "DJANGO_DEBUG", "PORT", "HOST")}
    environment.update(env or {})
    result = subprocess.run(
        [shutil.which("make"), "-s", "run", f"BIN={tmp_path}", f"STAMP={stamp}", *args],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.splitlines()


@pytest.mark.parametrize(
    "args, issuer, bind",
    [
        ([], "http://localhost:8000", "localhost:8000"),
        (["PORT=8123"], "http://localhost:8123", "localhost:8123"),
        (["HOST=0.0.0.0", "PORT=8124"], "http://localhost:8124", "0.0.0.0:8124"),
        (["HOST=[::]", "PORT=8125"], "http://localhost:8125", "[::]:8125"),
        (["HOST=127.0.0.1", "PORT=9000"], "http://127.0.0.1:9000", "127.0.0.1:9000"),
    ],
)
def test_every_step_of_make_run_uses_the_issuer_of_its_port(tmp_path, args, issuer, bind):
    lines = [line for line in make_run(tmp_path, *args) if line.startswith("OAUTH_ISSUER=")]
    assert len(lines) == 3  # migrate, collectstatic, demo_server (which seeds, then serves)
    assert all(line.startswith(f"OAUTH_ISSUER={issuer} DJANGO_DEBUG=1 ") for line in lines), lines
    assert lines[-1].endswith(f"manage.py demo_server {bind}")


def test_an_explicit_issuer_wins(tmp_path):
    lines = [
        line
        for line in make_run(tmp_path, "PORT=8123", env={"OAUTH_ISSUER": "https://auth.example.com"})
        if "ARGS=" in line
    ]
    assert all(line.startswith("OAUTH_ISSUER=https://auth.example.com ") for line in lines), lines


def test_make_run_prints_no_recipe_and_summarises_the_migrations_in_a_line(tmp_path):
    lines = make_run(tmp_path)
    assert "Database ready (migrations applied)." in lines
    assert not any(line.startswith((".venv/", "echo", "@")) for line in lines)  # recipes are not echoed
    assert "--verbosity 0" in lines[0]


def test_make_run_installs_the_runtime_dependencies_only():
    dry = subprocess.run(
        [shutil.which("make"), "-n", "-B", "run", "VENV=/nonexistent-venv"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    installs = [line for line in dry.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert installs and all(line.rstrip().endswith("install --quiet .") for line in installs), installs
    test_dry = subprocess.run(
        [shutil.which("make"), "-n", "-B", "lint", "VENV=/nonexistent-venv"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert 'install --quiet ".[test]"' in test_dry
