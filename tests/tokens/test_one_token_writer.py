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


MODEL_GETTERS = {"get_access_token_model", "get_refresh_token_model"}  # DOT's


def _model_names(tree: ast.AST) -> set[str]:
    """The names a token model goes by in this module: its own, an import's alias, and a name
    assigned DOT's model getter (`AccessToken = get_access_token_model()`)."""
    names = set(TOKEN_MODELS)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {alias.asname for alias in node.names if alias.name in TOKEN_MODELS and alias.asname}
        elif isinstance(node, ast.Assign) and _is_model(node.value, set()):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return names


def _is_model(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MODEL_GETTERS


def token_rows_written(source: str) -> list[int]:
    """The lines of `source` that write a token row: AccessToken(...) or RefreshToken(...) (under
    any name, or as DOT's getter returns them), their managers' create / bulk_create /
    get_or_create / update_or_create, or DOT's set_token_value."""
    tree = ast.parse(source)
    names = _model_names(tree)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if _is_model(called, names) or (isinstance(called, ast.Name) and called.id == "set_token_value"):
            lines.append(node.lineno)
        elif isinstance(called, ast.Attribute) and called.attr in WRITING_METHODS:
            owner = called.value
            # AccessToken.objects.create(...), RefreshToken._default_manager.bulk_create(...)
            if isinstance(owner, ast.Attribute) and _is_model(owner.value, names):
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
    assert token_rows_written("from oauthclients.models import AccessToken as Row\nRow.objects.create()\n") == [2]
    assert token_rows_written("Model = get_access_token_model()\nModel(user=user)\n") == [2]
    assert token_rows_written("get_refresh_token_model().objects.create(user=user)\n") == [1]
    assert token_rows_written("get_access_token_model().objects.filter(pk=1).delete()\n") == []
