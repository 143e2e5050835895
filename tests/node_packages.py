"""The tests' Node packages (tests/clients/node, examples/idjag_provider), installed by `npm ci`
(their lock, exactly) in a cache directory, once per version of their files."""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def node_cache() -> Path:
    return Path(os.environ.get("OIDC_NODE_CACHE") or Path.home() / ".cache" / "oidc-client-tests")


def npm_installed(
    package: Path,
    files: tuple[str, ...],
    *,
    prefix: str,
    main: str,
    needed_for: str,
    npm: list[str] | None = None,
    env: dict | None = None,
) -> Path:
    """`package`'s `files` copied to OIDC_NODE_CACHE (default ~/.cache/oidc-client-tests)/<prefix>
    <fingerprint of the files> and installed there, unless its `main` module already is. Without
    node and npm: skipped, or failed under CI (`CI=true`), where `needed_for` must not silently go
    untested. `npm` and `env`: another Node's npm (MCP Inspector's Node 22), with its PATH."""
    if npm is None:
        found, node = shutil.which("npm"), shutil.which("node")
        if found is None or node is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"node and npm are needed for {needed_for}")
            pytest.skip("npm is not installed")
        npm = [found]
    fingerprint = hashlib.sha256(b"".join((package / name).read_bytes() for name in files)).hexdigest()
    target = node_cache() / f"{prefix}{fingerprint[:16]}"
    if not (target / "node_modules" / main).is_dir():
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copy(package / name, target / name)
        subprocess.run(
            [*npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=target,
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
    return target
