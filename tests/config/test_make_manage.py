"""`make manage ARGS=…` runs a manage.py command with the environment `make run` gives its server, so
that what it prints is that server's: `identityprovider add` beside `make run PORT=18200` prints the
redirect URI under :18200 (docs/accounts.md, "Upstream identity providers")."""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.config.test_make_run import make_run

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MANAGE_ENV = ("OAUTH_ISSUER", "DJANGO_DEBUG", "PORT", "HOST", "DATABASE_URL", "DJANGO_SECRET_KEY")

# Stands in for the virtualenv's python: what it was given, and the first line of its standard input.
FAKE_PYTHON = """#!/bin/sh
echo "OAUTH_ISSUER=$OAUTH_ISSUER DJANGO_DEBUG=$DJANGO_DEBUG ARGS=$*"
read line
echo "STDIN=$line"
"""


def make_manage(tmp_path, *args, bin_dir: Path | None = None, stdin: str = "", env=None) -> subprocess.CompletedProcess:
    if bin_dir is None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        (bin_dir / "python").write_text(FAKE_PYTHON)
        (bin_dir / "python").chmod(stat.S_IRWXU)
    stamp = tmp_path / "installed-stamp"  # newer than pyproject.toml: make installs nothing
    stamp.touch()
    environment = {key: value for key, value in os.environ.items() if key not in MANAGE_ENV} | (env or {})
    return subprocess.run(
        [shutil.which("make"), "-s", "manage", f"BIN={bin_dir}", f"STAMP={stamp}", *args],
        cwd=PROJECT_ROOT,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def served_issuer(tmp_path, *args) -> str:
    """The OAUTH_ISSUER `make run` gives its server for these arguments."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    given = next(line for line in make_run(run_dir, *args) if line.startswith("OAUTH_ISSUER="))
    return given.split()[0].removeprefix("OAUTH_ISSUER=")


@pytest.mark.parametrize("args", [[], ["PORT=18200"], ["HOST=0.0.0.0", "PORT=18201"]], ids=["default", "port", "host"])
def test_the_command_gets_the_issuer_make_run_gives_its_server(tmp_path, args):
    result = make_manage(
        tmp_path, *args, "ARGS=identityprovider add --name 'Acme SSO' --client-id sched", stdin="the-secret\n"
    )
    assert result.returncode == 0, result.stderr
    given, read = result.stdout.splitlines()
    assert given == (
        f"OAUTH_ISSUER={served_issuer(tmp_path, *args)} DJANGO_DEBUG=1 "
        "ARGS=manage.py identityprovider add --name Acme SSO --client-id sched"
    )
    assert read == "STDIN=the-secret"  # the secret on standard input reaches the command


def test_an_explicit_issuer_wins(tmp_path):
    result = make_manage(tmp_path, "PORT=18200", "ARGS=check", env={"OAUTH_ISSUER": "https://auth.example.com"})
    assert result.stdout.startswith("OAUTH_ISSUER=https://auth.example.com DJANGO_DEBUG=1 "), result.stdout


def test_identityprovider_add_beside_make_run_prints_the_redirect_uri_of_that_server(tmp_path):
    """The real command, through `make manage PORT=18200`, on a database of its own."""
    database = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    bin_dir = Path(sys.executable).parent
    migrated = make_manage(tmp_path, "ARGS=migrate --noinput -v 0", bin_dir=bin_dir, env=database)
    assert migrated.returncode == 0, migrated.stderr
    added = make_manage(
        tmp_path,
        "PORT=18200",
        "ARGS=identityprovider add --name 'Acme SSO' --issuer https://sso.acme.example --client-id sched",
        bin_dir=bin_dir,
        stdin="upstream-client-secret\n",
        env=database,
    )
    assert added.returncode == 0, added.stderr
    issuer = served_issuer(tmp_path, "PORT=18200")
    assert issuer.endswith(":18200")
    assert json.loads(added.stdout)["redirect_uri"] == f"{issuer}/accounts/oidc/acme-sso/login/callback/"
    assert "OAUTH_ISSUER is not set" not in added.stderr
