"""A private PostgreSQL cluster for tests that stop and start the database server.

The shared server (the one the test database lives on) must never be restarted by a test, so a
test that needs an outage gets its own cluster: initdb into a temporary directory, a free port on
loopback, trust authentication, and everything removed afterwards. initdb and postgres refuse to
run as root, so as root they run as the `postgres` OS user (runuser).
"""

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

COMMAND_TIMEOUT = 60


class ClusterUnavailable(RuntimeError):
    """This machine cannot run a private cluster (no binaries, no user to run them as)."""


def _bindir() -> Path:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).parent
    raise ClusterUnavailable("no initdb/pg_ctl found (looked in /usr/lib/postgresql/*/bin and PATH)")


def _run_as() -> list[str]:
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ClusterUnavailable("running as root and there is no `postgres` user to run initdb as") from None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise ClusterUnavailable("running as root and there is no runuser")
    return [runuser, "-u", "postgres", "--"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class PrivateCluster:
    directory: Path
    port: int
    bindir: Path
    run_as: list[str]

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        return self.directory / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def pg_ctl(self, *args: str) -> None:
        command = [*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-t", "30", *args]
        subprocess.run(command, check=True, timeout=COMMAND_TIMEOUT, capture_output=True)

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.directory}"
            " -c fsync=off -c full_page_writes=off"
        )
        self.pg_ctl("-l", str(self.log_path), "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self.pg_ctl("-m", mode, "stop")

    def is_running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no postgres log)"


@contextlib.contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    """initdb, start on a free loopback port; always stopped (immediate) and removed afterwards."""
    bindir, run_as = _bindir(), _run_as()
    directory = Path(tempfile.mkdtemp(prefix="pgcluster-"))
    cluster = PrivateCluster(directory=directory, port=_free_port(), bindir=bindir, run_as=run_as)
    try:
        if run_as:
            entry = pwd.getpwnam("postgres")
            os.chown(directory, entry.pw_uid, entry.pw_gid)
        subprocess.run(
            [
                *run_as,
                str(bindir / "initdb"),
                "-D",
                str(cluster.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
            check=True,
            timeout=COMMAND_TIMEOUT,
            capture_output=True,
        )
        cluster.start()
        yield cluster
    finally:
        if cluster.is_running():
            with contextlib.suppress(subprocess.SubprocessError):
                cluster.stop("immediate")
        shutil.rmtree(directory, ignore_errors=True)
