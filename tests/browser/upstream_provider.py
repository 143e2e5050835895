"""panva's `oidc-provider` as an organization's identity provider: the example
examples/idjag_provider (package.json and its lock; docs/agents.md, "The organization's
provider"), in its own Node process on a free loopback port (issuer `http://localhost:PORT`).
Used by tests/browser/test_upstream_provider.py (people sign in through it) and
tests/clients/test_mcp_idjag_oidc_provider.py (it issues ID-JAGs by token exchange).
"""

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from tests.integration.server import free_port
from tests.node_packages import npm_installed

PACKAGE = Path(__file__).resolve().parents[2] / "examples" / "idjag_provider"
PACKAGE_FILES = ("package.json", "package-lock.json", "provider.mjs")
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
# It listens within a second or two; a start that has not by then is stuck (seen once in CI: the
# process asleep before listening, no CPU), and is tried again rather than waited on for ever.
START_SECONDS = 30
START_ATTEMPTS = 2


@pytest.fixture(scope="session")
def upstream_package() -> Path:
    """examples/idjag_provider installed (tests/node_packages.py)."""
    return npm_installed(
        PACKAGE, PACKAGE_FILES, prefix="upstream-", main="oidc-provider", needed_for="the tests with oidc-provider"
    )


class Upstream:
    """The provider's Node process (examples/idjag_provider/provider.mjs says what it serves).

    `clients` are its registered clients ({client_id, client_secret, redirect_uris[, grant_types]});
    `accounts` the people who may sign in ({login: {email, email_verified, amr}}); with
    `id_jag_policy` (a JSON file, read at each request) it also issues ID-JAGs by RFC 8693 token
    exchange. Each start makes a new signing key: `restart()` is a key rotation."""

    def __init__(self, package: Path, *, clients: list[dict], accounts: dict, id_jag_policy: Path | None = None):
        self._configure(
            package,
            {
                "port": free_port(),
                "clients": clients,
                "accounts": accounts,
                **({"id_jag_policy": str(id_jag_policy)} if id_jag_policy else {}),
            },
        )

    @classmethod
    def from_config(cls, package: Path, config: dict) -> "Upstream":
        """The provider with a whole configuration file's content (its `port` a free one), as an
        operator writes it (tests/examples/test_idjag_provider.py: the shipped example)."""
        upstream = cls.__new__(cls)
        upstream._configure(package, config)
        return upstream

    def _configure(self, package: Path, config: dict) -> None:
        self.package = package
        self.id_jag_policy = Path(config["id_jag_policy"]) if config.get("id_jag_policy") else None
        self.port = config["port"]
        self.issuer = config.get("issuer", f"http://localhost:{self.port}")
        self.config_path = Path(tempfile.mkdtemp(prefix="upstream-")) / "config.json"
        self.config_path.write_text(json.dumps(config))
        self._start()

    def _start(self) -> None:
        said: list[str] = []
        for _attempt in range(START_ATTEMPTS):
            said = self._start_once()
            if said and "listening" in said[-1]:
                return
            self._stop()
        raise AssertionError(
            f"the upstream provider did not start (in {START_SECONDS} s, {START_ATTEMPTS} tries):\n" + "".join(said)
        )

    def _start_once(self) -> list[str]:
        """Starts the process; what it said until "listening", its exit ("") or the deadline."""
        env = {"PATH": os.environ.get("PATH", ""), "NODE_ENV": "test"}
        self.process = subprocess.Popen(
            ["node", str(self.package / "provider.mjs"), str(self.config_path)],
            cwd=self.package,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        stdout = self.process.stdout

        def read() -> None:
            # Its warnings first (the runtime), then "listening"; "" once it exits.
            while True:
                line = stdout.readline()
                lines.put(line)
                if not line or "listening" in line:
                    return

        threading.Thread(target=read, daemon=True).start()
        said = []
        try:
            while not said or (said[-1] and "listening" not in said[-1]):
                said.append(lines.get(timeout=START_SECONDS))
        except queue.Empty:
            said.append(f"(nothing more after {START_SECONDS} s)\n")
        return said

    def restart(self) -> None:
        """The same issuer on the same port, with a new signing key: the old one is gone from its JWKS."""
        self._stop()
        self._start()

    def close(self) -> None:
        self._stop()
        shutil.rmtree(self.config_path.parent, ignore_errors=True)

    def _stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.process.stdout.close()
