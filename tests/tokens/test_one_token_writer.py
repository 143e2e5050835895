"""Issued token rows have one writer, tokens/services.py:access_token_issue, which records each
token's lineage: a second writer would issue tokens that what ends their ancestors cannot find
(the way the token exchange's own writer let a token outlive `identityprovider deny-assertions`).

The guard reads the project's source (the apps, the shell and the plumbing; not the tests, the
bench or the migrations) for any construction of an access or refresh token row or any token value
set on one."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = (
    "accounts",
    "config",
    "oauthclients",
    "oauthflows",
    "operations",
    "plumbing",
    "profiles",
    "signing",
    "tokens",
)
THE_WRITER = Path("tokens/services.py")
TOKEN_MODELS = {"AccessToken", "RefreshToken"}
WRITING_METHODS = {"create", "bulk_create", "get_or_create", "update_or_create"}


def token_rows_written(source: str) -> list[int]:
    """The lines of `source` that write a token row: AccessToken(...) or RefreshToken(...), their
    managers' create / bulk_create / get_or_create / update_or_create, or DOT's set_token_value."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if isinstance(called, ast.Name) and called.id in TOKEN_MODELS | {"set_token_value"}:
            lines.append(node.lineno)
        elif isinstance(called, ast.Attribute) and called.attr in WRITING_METHODS:
            owner = called.value
            # AccessToken.objects.create(...), RefreshToken._default_manager.bulk_create(...)
            if (
                isinstance(owner, ast.Attribute)
                and isinstance(owner.value, ast.Name)
                and owner.value.id in TOKEN_MODELS
            ):
                lines.append(node.lineno)
    return lines


def test_only_the_one_writer_writes_token_rows():
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts or relative == THE_WRITER:
                continue
            lines = token_rows_written(path.read_text())
            if lines:
                found[str(relative)] = lines
    assert found == {}, f"token rows written outside {THE_WRITER}: {found}"
    assert token_rows_written((ROOT / THE_WRITER).read_text()), "the writer itself no longer writes a row"


def test_the_guard_sees_each_way_of_writing_a_row():
    assert token_rows_written("access = AccessToken(user=user)\n") == [1]
    assert token_rows_written("x = 1\nRefreshToken.objects.create(user=user)\n") == [2]
    assert token_rows_written("AccessToken.objects.bulk_create(rows)\n") == [1]
    assert token_rows_written("set_token_value(row, value)\n") == [1]
    assert token_rows_written("AccessToken.objects.filter(pk=1).delete()\nConsent.objects.create()\n") == []
