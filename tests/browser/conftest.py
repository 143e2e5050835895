"""A real browser for the journey tests: Debian's Chromium driven by Playwright, headless.

Playwright's own browser download is never used (`playwright install` cannot run here): the
browser is the system's Chromium (`apt-get install chromium`; `.ci/run` installs it). Without it
the browser tests skip with a reason, except under CI (`CI=true`), where a missing browser or a
missing `playwright` package is a failure: the journey must not silently stop being tested.
"""

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.factories import make_user

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("BROWSER_TESTS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# Every wait is bounded: a page that never comes fails the test in seconds, not at CI's limit.
ACTION_TIMEOUT_MS = 10_000
NAVIGATION_TIMEOUT_MS = 15_000


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests must run in CI; .ci/run installs Chromium)")
    pytest.skip(reason)


@pytest.fixture
def chromium() -> Iterator["object"]:
    """A headless Chromium for one test, closed (with Playwright's driver) when the test ends.

    Function-scoped on purpose: Playwright's sync API runs an event loop in this thread, and Django
    refuses ORM calls while one is running, so the test does its database work before asking for
    the browser or after it is gone; and the live server's database flush comes after this closes.
    """
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _unavailable(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install '.[test]')")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def new_page(chromium, *, width: int = 1100, height: int = 900):
    """A page in a fresh context (its own cookies: one person), with bounded waits."""
    context = chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    page.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    return page


class Screenshots:
    """Numbered full-page screenshots in one folder per test."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.count = 0

    def __call__(self, page, name: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def screenshots(request) -> Screenshots:
    """BROWSER_SCREENSHOTS_DIR (default test-output/screenshots/) / <test name>/, emptied first."""
    root = Path(os.environ.get("BROWSER_SCREENSHOTS_DIR") or PROJECT_ROOT / "test-output" / "screenshots")
    folder = root / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    return Screenshots(folder)


@pytest.fixture
def people(transactional_db):
    """Created before the browser starts (no ORM call runs while Playwright's loop is up)."""
    return {
        "developer": make_user("developer"),
        "admin": make_user("admin", staff=True),
        "enduser": make_user("enduser"),
    }


def in_thread(work):
    """ORM work while the browser runs: in a thread of its own, since Playwright's event loop runs
    in this one and Django refuses the ORM there (the chromium fixture above)."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    def run():
        try:
            return work()
        finally:
            connection.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()
