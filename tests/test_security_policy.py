"""The repository's own security policy (SECURITY.md, at its root), and every citation of it.

Each guarantee of SECURITY.md names its tests, and each named test file and test function exists;
the policy says how to report a vulnerability. Every comment, docstring and document that cites
`SECURITY.md` cites this file: a section it names (`SECURITY.md, "Consent page"`) is a heading of
it, a sentence it quotes (`SECURITY.md: "Oversized inputs are refused before any hashing"`) is in
it, and nothing points at a SECURITY.md kept elsewhere.
"""

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "SECURITY.md"
TEST_REFERENCE = re.compile(r"`(tests/[\w/.-]+\.py)(?:::(\w+))?`")
HEADING = re.compile(r"^## (.+)$", re.MULTILINE)
# `SECURITY.md, "Section"`, `SECURITY.md: "a sentence"`, `(SECURITY.md, token endpoint)`.
CITATION = re.compile(r"""SECURITY\.md`?\s*([,:])\s*(?:"([^"]+)"|([a-z][a-z ]+)(?=[);]))""")
PATH = re.compile(r"[\w./-]+/SECURITY\.md")
KEPT_OUTSIDE = re.compile(r"SECURITY\.md`?,?\s+kept\s[^.]*outside\s+this\s+repository")


def elsewhere(name: str, text: str) -> list[str]:
    """Paths to a SECURITY.md that is not this repository's, and words placing it outside."""
    here = (ROOT / name).parent
    paths = [p for p in PATH.findall(text) if POLICY not in ((here / p).resolve(), (ROOT / p).resolve())]
    return paths + KEPT_OUTSIDE.findall(text)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _normal(text: str) -> str:
    """Words only: line breaks, comment marks and indentation of a wrapped quotation dropped."""
    return " ".join(re.sub(r"\s*\n\s*#?\s*", " ", text).split()).lower()


def sections(policy: str) -> dict[str, str]:
    parts = HEADING.split(policy)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def guarantees(body: str) -> list[str]:
    """Each bullet of a section, its wrapped lines joined."""
    return [" ".join(item.split()) for item in re.split(r"^- ", body, flags=re.MULTILINE)[1:]]


def missing_tests(line: str) -> list[str]:
    """The test files and functions a guarantee names that do not exist (or, if it names none, that)."""
    named = TEST_REFERENCE.findall(line)
    if not named:
        return ["(no test named)"]
    missing = []
    for path, function in named:
        file = ROOT / path
        if not file.is_file():
            missing.append(path)
        elif function and function not in {
            node.name for node in ast.walk(ast.parse(_text(file))) if isinstance(node, ast.FunctionDef)
        }:
            missing.append(f"{path}::{function}")
    return missing


def test_the_policy_is_in_the_repository_and_says_how_to_report():
    policy = _text(POLICY)
    assert "Reporting a vulnerability" in sections(policy)
    assert "privately" in sections(policy)["Reporting a vulnerability"]


def test_every_guarantee_names_tests_that_exist():
    by_section = {
        title: {line[:60]: missing for line in guarantees(body) if (missing := missing_tests(line))}
        for title, body in sections(_text(POLICY)).items()
        if title != "Reporting a vulnerability"
    }
    assert {title: problems for title, problems in by_section.items() if problems} == {}
    assert sum(len(guarantees(body)) for body in sections(_text(POLICY)).values()) >= 30


def citations(text: str) -> list[tuple[str, str]]:
    """(`,` for a section or `:` for a quotation, what is cited) of every citation in `text`."""
    return [(mark, quoted or section) for mark, quoted, section in CITATION.findall(text)]


def unresolved(cited: list[tuple[str, str]], policy: str) -> list[str]:
    headings = [title.lower() for title in sections(policy)]
    words = _normal(policy)
    problems = []
    for mark, what in cited:
        phrase = _normal(what)
        is_section = any(heading.startswith(phrase) for heading in headings)
        if not (is_section if mark == "," else (is_section or phrase in words)):
            problems.append(what)
    return problems


def _citing_files() -> list[str]:
    listed = subprocess.run(["git", "grep", "-l", "SECURITY.md"], cwd=ROOT, capture_output=True, text=True)
    return [name for name in listed.stdout.split() if name != "tests/test_security_policy.py"]


def test_every_citation_names_a_section_or_sentence_of_the_policy():
    policy = _text(POLICY)
    found = {
        name: problems for name in _citing_files() if (problems := unresolved(citations(_text(ROOT / name)), policy))
    }
    assert found == {}
    assert len(_citing_files()) >= 30  # the house cites it: something to check


def test_no_citation_points_at_a_security_md_elsewhere():
    found = {name: elsewhere(name, _text(ROOT / name)) for name in _citing_files()}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_the_checks_catch_what_does_not_resolve(tmp_path):
    policy = "# P\n## Reporting a vulnerability\nprivately\n## Consent page\n- Framed never. `tests/test_layers.py`\n"
    source = (
        '"""SECURITY.md, "Consent page"; SECURITY.md, "No such section"; (SECURITY.md, consent page).\n'
        'SECURITY.md: "framed\n    # never"; SECURITY.md: "a sentence it lacks"."""'
    )
    assert unresolved(citations(source), policy) == ["No such section", "a sentence it lacks"]
    assert missing_tests("- Framed never. `tests/test_layers.py`") == []
    assert missing_tests("- Framed. `tests/test_layers.py::no_such_test` `tests/nowhere.py`") == [
        "tests/test_layers.py::no_such_test",
        "tests/nowhere.py",
    ]
    assert missing_tests("- Framed never.") == ["(no test named)"]
    assert elsewhere("docs/x.md", "see ../shared/SECURITY.md, [policy](../SECURITY.md)") == ["../shared/SECURITY.md"]
    assert len(elsewhere("docs/x.md", "the brief (`SECURITY.md`, kept with the spec outside this\nrepository)")) == 1
