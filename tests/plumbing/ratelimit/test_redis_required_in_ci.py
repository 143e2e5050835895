"""The Redis tests skip on a laptop without Redis, and fail in CI (CI=true) instead of skipping."""

import os
import subprocess
import sys

from tests.plumbing.ratelimit.settings_probe import PROJECT

REDIS_TEST = "tests/plumbing/ratelimit/test_shared_counts.py::test_concurrent_counting_on_redis_loses_no_hit"


def run_redis_test(**env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in ("CI", "REDIS_URL")}
    environment.update(REDIS_URL="redis://127.0.0.1:1/0", **env)  # nothing listens on port 1
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", REDIS_TEST],
        cwd=PROJECT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unreachable_redis_fails_the_run_in_ci():
    done = run_redis_test(CI="true")
    assert done.returncode == 1, done.stdout[-1500:]
    assert "CI=true: Redis is required" in done.stdout


def test_an_unreachable_redis_skips_outside_ci():
    done = run_redis_test()
    assert done.returncode == 0, done.stdout[-1500:]
    assert "1 skipped" in done.stdout
    assert "Redis is not reachable at 127.0.0.1:1" in done.stdout
