"""panva's `oidc-provider` (npm, tests/browser/upstream: package.json and its lock) as an
organization's identity provider, in its own Node process on a free loopback port (issuer
`http://localhost:PORT`). Used by tests/browser/test_upstream_provider.py (people sign in through
it) and tests/clients/test_mcp_idjag_oidc_provider.py (it issues ID-JAGs by token exchange).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.server import free_port
from tests.node_packages import npm_installed

PACKAGE = Path(__file__).parent / "upstream"
PACKAGE_FILES = ("package.json", "package-lock.json", "provider.mjs")
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


@pytest.fixture(scope="session")
def upstream_package() -> Path:
    """tests/browser/upstream installed (tests/node_packages.py)."""
    return npm_installed(
        PACKAGE, PACKAGE_FILES, prefix="upstream-", main="oidc-provider", needed_for="the tests with oidc-provider"
    )


class Upstream:
    """The provider's Node process (tests/browser/upstream/provider.mjs says what it serves).

    `clients` are its registered clients ({client_id, client_secret, redirect_uris[, grant_types]});
    `accounts` the people who may sign in ({login: {email, email_verified, amr}}); with
    `id_jag_policy` (a JSON file, read at each request) it also issues ID-JAGs by RFC 8693 token
    exchange. Each start makes a new signing key: `restart()` is a key rotation."""

    def __init__(self, package: Path, *, clients: list[dict], accounts: dict, id_jag_policy: Path | None = None):
        self.package = package
        self.id_jag_policy = id_jag_policy
        self.port = free_port()
        self.issuer = f"http://localhost:{self.port}"
        self.config = {
            "port": self.port,
            "clients": clients,
            "accounts": accounts,
            **({"id_jag_policy": str(id_jag_policy)} if id_jag_policy else {}),
        }
        self._start()

    def _start(self) -> None:
        env = {"PATH": os.environ.get("PATH", ""), "UPSTREAM_CONFIG": json.dumps(self.config), "NODE_ENV": "test"}
        self.process = subprocess.Popen(
            ["node", str(self.package / "provider.mjs")],
            cwd=self.package,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        said = []
        # Its warnings first (the runtime), then "listening"; "" once it exits.
        while not said or (said[-1] and "listening" not in said[-1]):
            said.append(self.process.stdout.readline())
        if not said[-1]:
            self.close()
            raise AssertionError("the upstream provider did not start:\n" + "".join(said))

    def restart(self) -> None:
        """The same issuer on the same port, with a new signing key: the old one is gone from its JWKS."""
        self.close()
        self._start()

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.process.stdout.close()
