"""docs/configuration.md lists exactly the environment variables the server reads (issue 32: the
configuration table cannot drift from the settings)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The server's code: every package of ours but the tests, the bench and the examples (which have
# their own settings, documented with them).
PACKAGES = [
    "config",
    "accounts",
    "oauthclients",
    "signing",
    "tokens",
    "oauthflows",
    "operations",
    "profiles",
    "plumbing",
]
READS = re.compile(
    r"""(?:env_(?:str|bool|int|list|rate|networks)\(\s*|os\.environ\.get\(\s*|os\.environ\[\s*|os\.getenv\(\s*|environ\.get\(\s*)["']([A-Z][A-Z0-9_]+)["']"""
)
ROW = re.compile(r"^\|\s*(`[A-Z][A-Z0-9_]+`(?:\s*,\s*`[A-Z][A-Z0-9_]+`)*)\s*\|", re.M)
# Read through a computed name (f-string or loop): the names they take, spelled out.
COMPUTED = re.compile(r'RATELIMIT_\{|f"RATELIMIT_')


def variables_read() -> set[str]:
    names = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            names |= set(READS.findall(path.read_text()))
    return names


def variables_documented() -> set[str]:
    text = (ROOT / "docs" / "configuration.md").read_text()
    return {name.strip("` ") for cell in ROW.findall(text) for name in cell.split(",")}


def test_every_variable_the_server_reads_has_a_row():
    missing = sorted(variables_read() - variables_documented())
    assert missing == [], f"read by the code but not in docs/configuration.md: {missing}"


def test_every_row_names_a_variable_the_server_reads():
    from django.conf import settings

    rate_limits = {f"RATELIMIT_{name.upper()}" for name in settings.RATELIMITS}
    stale = sorted(variables_documented() - variables_read() - rate_limits)
    assert stale == [], f"in docs/configuration.md but read nowhere: {stale}"


def test_the_readers_are_found():
    """The pattern finds the ways settings read the environment (so the two tests above can fail)."""
    sample = 'A = env_str("ONE")\nB = env_bool(\n    "TWO", True)\nC = os.environ.get("THREE")\nD = os.environ["FOUR"]'
    assert set(READS.findall(sample)) == {"ONE", "TWO", "THREE", "FOUR"}
