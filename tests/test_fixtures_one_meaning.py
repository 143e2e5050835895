"""One fixture per meaning, named for it: a fixture name defined in two places with different
bodies means two things, unless one is the override pytest is built for (a test module, or a
deeper conftest, giving its own value to a fixture of a conftest above it, as
`tests/oauthflows/test_rp_initiated_logout.py` gives `app_redirect_uris` its own).

NAMED_TWICE lists the names that still mean more than one thing, each with where; it may only
shrink: a new name defined twice with another meaning fails here, and so does a name renamed away
and left on the list. Tests mirror the code's layout: the plumbing's tests are under tests/plumbing.
"""

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# Still two meanings or more under one name (issue 39, "Fixtures"): none left; a name given a second
# meaning fails here (name it for what it is instead).
NAMED_TWICE: dict[str, int] = {}


def _is_fixture(node: ast.FunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
    return False


def fixtures(root: Path) -> dict[str, list[tuple[Path, str]]]:
    """Each fixture name and its definitions: (file, its body as the parser sees it)."""
    found: dict[str, list[tuple[Path, str]]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and _is_fixture(node):
                body = ast.dump(ast.Module(body=node.body, type_ignores=[]))
                found[node.name].append((path, body))
    return found


def _conftests_above(path: Path, root: Path) -> set[Path]:
    above, folder = set(), path.parent
    while folder.is_relative_to(root):
        conftest = folder / "conftest.py"
        if conftest != path and conftest.is_file():
            above.add(conftest)
        folder = folder.parent
    return above


def meanings(root: Path) -> dict[str, list[str]]:
    """Fixture names defined with different bodies in places that do not override one another."""
    clashes = {}
    for name, definitions in fixtures(root).items():
        if len({body for _path, body in definitions}) < 2:
            continue
        files = {path for path, _body in definitions}
        apart = sorted(
            str(path.relative_to(root)) for path, _body in definitions if not _conftests_above(path, root) & files
        )
        if len(apart) > 1:
            clashes[name] = apart
    return clashes


def test_no_new_fixture_name_means_two_things():
    clashes = meanings(TESTS)
    assert {name: len(places) for name, places in clashes.items()} == NAMED_TWICE, clashes


def test_the_guard_tells_an_override_from_a_second_meaning(tmp_path):
    (tmp_path / "conftest.py").write_text("@pytest.fixture\ndef app():\n    return 1\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "test_x.py").write_text("@pytest.fixture\ndef app():\n    return 2\n")  # an override
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "test_y.py").write_text("@pytest.fixture\ndef server():\n    return 'gunicorn'\n")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "test_z.py").write_text("@pytest.fixture(params=[1])\ndef server():\n    return 'url'\n")
    (tmp_path / "c" / "test_w.py").write_text("@pytest.fixture(params=[1])\ndef server():\n    return 'url'\n")
    assert meanings(tmp_path) == {"server": ["b/test_y.py", "c/test_w.py", "c/test_z.py"]}


def test_the_plumbings_tests_are_under_tests_plumbing():
    """A test file named after a module of plumbing/ lives in tests/plumbing (the rate limits'
    tests, which span ratelimit.py, clientip.py, slots.py and countercache.py, in tests/plumbing/ratelimit)."""
    modules = {path.stem for path in (ROOT / "plumbing").glob("*.py")} - {"__init__"}
    # The harnesses (a browser, gunicorn, client libraries) test behaviour across the layers.
    harnesses = [TESTS / "browser", TESTS / "integration", TESTS / "clients"]
    misplaced = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("test_*.py")
        if path.stem.removeprefix("test_") in modules
        and not path.is_relative_to(TESTS / "plumbing")
        and not any(path.is_relative_to(harness) for harness in harnesses)
    ]
    assert misplaced == []
    assert (TESTS / "plumbing" / "test_paths.py").is_file() and (TESTS / "plumbing" / "ratelimit").is_dir()
