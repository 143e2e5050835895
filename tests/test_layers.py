"""The layers hold (`make lint` runs lint-imports), and an import that runs up a layer fails with its name."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
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
    assert "4 kept, 0 broken" in result.stdout


def test_an_import_up_a_layer_fails_with_its_name(tmp_path):
    tree = copy_of_the_tree(tmp_path)
    (tree / "plumbing" / "leak.py").write_text("from oauthflows import cors  # noqa\n")
    (tree / "scopes" / "leak.py").write_text("import oauthclients.models  # noqa\n")
    (tree / "signing" / "leak.py").write_text("from tokens import redemption  # noqa\n")
    (tree / "oauthclients" / "leak.py").write_text("from signing import keys  # noqa\n")
    # operations reads every app; no app may import it.
    (tree / "oauthflows" / "leak.py").write_text("import operations.metrics  # noqa\n")
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "plumbing.leak -> oauthflows.cors" in result.stdout
    assert "scopes.leak -> oauthclients.models" in result.stdout
    assert "signing.leak -> tokens.redemption" in result.stdout
    assert "oauthclients.leak -> signing.keys" in result.stdout
    assert "oauthflows.leak -> operations.metrics" in result.stdout


def test_a_room_of_the_flows_importing_one_above_it_fails_with_its_name(tmp_path):
    tree = copy_of_the_tree(tmp_path)
    # The grants never reach the browser's pages; registration and CORS reach no other room.
    (tree / "oauthflows" / "token" / "leak.py").write_text("from oauthflows.pages import views  # noqa\n")
    (tree / "oauthflows" / "registration" / "leak.py").write_text("import oauthflows.token.oauth2  # noqa\n")
    cors = tree / "oauthflows" / "cors.py"
    cors.write_text(cors.read_text() + "\nfrom oauthflows.token import endpoints  # noqa\n")
    (tree / "oauthflows" / "pages" / "leak.py").write_text("from oauthflows.discovery import metadata  # noqa\n")
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "oauthflows.token.leak -> oauthflows.pages.views" in result.stdout
    assert "oauthflows.registration.leak -> oauthflows.token.oauth2" in result.stdout
    assert "oauthflows.pages.leak -> oauthflows.discovery.metadata" in result.stdout
    assert "oauthflows.cors -> oauthflows.token.endpoints" in result.stdout


def _circles(graph, modules) -> list[list[str]]:
    """Every import circle among `modules` (imports inside functions included), each once."""
    found, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in modules:
                continue
            if state.get(imported) == "open":
                found.append(path[path.index(imported) :] + [imported])
            elif imported not in state:
                visit(imported, [*path, imported])
        state[module] = "done"

    for module in sorted(modules):
        if module not in state:
            visit(module, [module])
    return found


def test_no_module_imports_itself_back_through_others():
    """No circle between modules anywhere in the house, hidden in a function or not (issue 32)."""
    import grimp

    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)
    assert _circles(graph, graph.modules) == []


def test_the_circle_finder_finds_a_circle():
    class Graph:
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, module):
            return self.edges[module]

    assert _circles(Graph(), set(Graph.edges)) == [["a", "b", "c", "a"]]
