"""The layers hold (`make lint` runs lint-imports), and an import that runs up a layer fails with its name."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["config", "accounts", "oauthclients", "oauthflows", "profiles", "scopes", "plumbing"]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
    )


def copy_of_the_tree(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_layers_are_kept(tmp_path):
    result = lint_imports(copy_of_the_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def test_an_import_up_a_layer_fails_with_its_name(tmp_path):
    tree = copy_of_the_tree(tmp_path)
    (tree / "plumbing" / "leak.py").write_text("from oauthflows import cors  # noqa\n")
    (tree / "scopes" / "leak.py").write_text("import oauthclients.models  # noqa\n")
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "plumbing.leak -> oauthflows.cors" in result.stdout
    assert "scopes.leak -> oauthclients.models" in result.stdout
