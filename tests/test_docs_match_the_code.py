"""The docs name only what exists: every file path in README.md and docs/*.md is a file or folder of
this repository, and every setting they name (OAUTH_*, DJANGO_*, DATABASE_*, RATELIMIT_*, REDIS_*,
LOG_*, METRICS_*, OTEL_*) is read by the code; a configuration table's names are read from the
environment. A rename or a removal that leaves a doc behind fails here.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOC_IDS = [str(doc.relative_to(ROOT)) for doc in DOCS]

URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s)`>\]\"']+")
# A path: at least one folder, then a name with one of these extensions (a folder alone, a module
# path with dots or a command is not checked). After `@`, an npm package's module specifier
# (`@modelcontextprotocol/sdk/client/index.js`), not a file of ours.
EXTENSIONS = "py|md|json|toml|html|txt|ya?ml|cfg|ini|sh|js|mjs|css|png|svg|conf|sql|lock|csv"
PATH = re.compile(rf"(?<![\w/.$~{{@-])((?:[\w.-]+/)+[\w.-]*\.(?:{EXTENSIONS}))(?![\w/])")
# Named in the docs and read by a library rather than by our code (each with the library's name).
READ_BY_A_LIBRARY = {"OTEL_EXPORTER_OTLP_HEADERS": "opentelemetry-exporter-otlp-proto-http"}
PREFIXES = ("OAUTH", "DJANGO", "DATABASE", "RATELIMIT", "REDIS", "LOG", "METRICS", "OTEL")
SETTING = re.compile(rf"\b((?:{'|'.join(PREFIXES)})_[A-Z0-9_]*[A-Z0-9])\b")
TABLE_ROW = re.compile(rf"^\|\s*`((?:{'|'.join(PREFIXES)})_[A-Z0-9_]*[A-Z0-9])`", re.MULTILINE)
# Read from the environment: the settings' env_* helpers (and the examples' _env), os.environ,
# os.getenv, or a shell variable in the Makefile and CI scripts.
ENVIRONMENT_READ = re.compile(
    r"""(?:\b_?env\w*|environ\.get|getenv|environ\.setdefault|environ\.pop)\(\s*["']([A-Z0-9_]+)["']"""
    r"""|environ\[\s*["']([A-Z0-9_]+)["']\s*\]|\$\{?([A-Z][A-Z0-9_]+)"""
)


def _code() -> str:
    """Every tracked source file but the tests and the docs."""
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    sources = [
        name
        for name in names
        if not name.startswith("tests/")
        and (name.endswith((".py", ".sh", ".toml")) or name == "Makefile" or name.startswith(".ci/"))
    ]
    return "\n".join((ROOT / name).read_text(errors="ignore") for name in sources if (ROOT / name).is_file())


CODE = _code()
READ_FROM_ENVIRONMENT = {a or b or c for a, b, c in ENVIRONMENT_READ.findall(CODE)}


def _prose(doc: Path) -> str:
    return URL.sub(" ", doc.read_text(encoding="utf-8"))


def _exists(doc: Path, path: str) -> bool:
    """Relative to the repository, to the doc's folder, or (docs/security.md's test paths) to tests/."""
    for base in (ROOT, doc.parent, ROOT / "tests"):
        candidate = (base / path).resolve()
        if candidate.is_relative_to(ROOT) and candidate.exists():
            return True
    return False


def _is_placeholder(path: str) -> bool:
    # `OAUTH_ISSUER/.well-known/jwks.json`: a setting's value, then a path under it. `../../x.json` in
    # a snippet for another project's file: relative to that file, not to anything here.
    first = path.split("/", 1)[0]
    return first.isupper() or path.startswith("../../")


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_file_path_named_in_the_doc_exists(doc):
    named = {match for match in PATH.findall(_prose(doc)) if not _is_placeholder(match)}
    missing = sorted(path for path in named if not _exists(doc, path))
    assert missing == [], f"{doc.relative_to(ROOT)} names files that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_setting_named_in_the_doc_is_read_by_the_code(doc):
    named = set(SETTING.findall(_prose(doc)))
    unread = sorted(
        name
        for name in named
        if name not in READ_FROM_ENVIRONMENT
        and name not in READ_BY_A_LIBRARY
        and f'"{name}"' not in CODE
        and f"'{name}'" not in CODE
        and f"settings.{name}" not in CODE
    )
    assert unread == [], f"{doc.relative_to(ROOT)} names settings nothing reads: {unread}"


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_a_configuration_tables_names_are_read_from_the_environment(doc):
    unread = sorted(set(TABLE_ROW.findall(doc.read_text(encoding="utf-8"))) - READ_FROM_ENVIRONMENT)
    assert unread == [], f"{doc.relative_to(ROOT)} lists variables no code reads from the environment: {unread}"


def test_the_checks_catch_a_missing_path_and_an_unread_variable(tmp_path):
    """The three tests above can fail: a made-up path and variable are caught."""
    doc = tmp_path / "made-up.md"
    doc.write_text("See `oauthclients/no_such_module.py` and `scopes/catalog.json`.\n| `OAUTH_NO_SUCH_THING` | x |\n")
    named = set(PATH.findall(_prose(doc)))
    assert named == {"oauthclients/no_such_module.py", "scopes/catalog.json"}
    assert [path for path in sorted(named) if not _exists(doc, path)] == ["oauthclients/no_such_module.py"]
    assert set(TABLE_ROW.findall(doc.read_text())) - READ_FROM_ENVIRONMENT == {"OAUTH_NO_SUCH_THING"}
    assert "OAUTH_ISSUER" in READ_FROM_ENVIRONMENT and "DATABASE_URL" in READ_FROM_ENVIRONMENT
