"""The docs name only what exists: every file path in README.md, SECURITY.md and docs/*.md is a
file or folder of this repository, and every setting they name (OAUTH_*, DJANGO_*, DATABASE_*,
RATELIMIT_*, REDIS_*, LOG_*, METRICS_*, OTEL_*) is read by the code; a configuration table's names
are read from the environment. Every relative link and anchor resolves as a reader's browser
resolves it (from the doc's own folder, to a heading of the target); every dotted name of our code
(`oauthflows.pages.views.AuthorizeView`) and every `oauthflows/token/oauth2.py:Validator`
reference is defined there; every bare `tier.py` is a file of the repository. The comments and
docstrings of every Python file are held to the same dotted names and references, and their paths
to the files of ours they name. A rename or a removal that leaves a doc or a comment behind fails
here.
"""

import ast
import functools
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
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


# Markdown links and images outside fenced code: [text](target) and ![alt](target).
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
PACKAGES = sorted(path.name for path in ROOT.iterdir() if (path / "__init__.py").is_file())
# `oauthflows.pages.views.AuthorizeView`, `scopes.jwt`: a name of ours, not part of a path or a longer word.
DOTTED = re.compile(rf"(?<![\w./-])((?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+)(?![\w/(-])")
# A check id (`config.E003`) or a file name (`accounts.md`): not a Python name.
NOT_PYTHON = re.compile(rf"\.(?:[EW]\d{{3}}|{EXTENSIONS})$")
FILE_REFERENCE = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.py):([A-Za-z_][\w.]*\w)")
BARE_FILE = re.compile(r"`([\w-]+\.(?:py|mjs|cfg|ya?ml|json|toml|html))`")


def _outside_code_blocks(doc: Path) -> str:
    return FENCED.sub("", doc.read_text(encoding="utf-8"))


def anchors(doc: Path) -> set[str]:
    """The ids GitHub gives the doc's headings: lower case, punctuation dropped, spaces to hyphens, a
    repeated heading suffixed -1, -2..."""
    seen: dict[str, int] = {}
    ids = set()
    for heading in HEADING.findall(_outside_code_blocks(doc)):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        ids.add(slug if count == 0 else f"{slug}-{count}")
    return ids


def _link_resolves(doc: Path, target: str) -> bool:
    path, _, anchor = target.partition("#")
    # Relative to the doc's folder only: a doc in docs/ linking `docs/…` means a file in docs/docs/.
    destination = (doc.parent / path).resolve() if path else doc
    if not destination.exists():
        return False
    return not anchor or (destination.suffix == ".md" and anchor in anchors(destination))


def broken_links(doc: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(_outside_code_blocks(doc))
        # https:, mailto:: not ours to check
        if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not _link_resolves(doc, target)
    ]


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_relative_link_and_anchor_resolves(doc):
    assert broken_links(doc) == [], f"{doc.relative_to(ROOT)} links to what is not there"


def _names(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """What a module or class body defines: functions, classes, assignments, imports (and those
    under an `if` or `try`)."""
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {name.id: node for name in ast.walk(target) if isinstance(name, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0]: node for alias in node.names}
        elif isinstance(node, ast.If | ast.Try):
            names |= _names(node.body) | _names(node.orelse)
    return names


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def defined_in(path: Path, dotted: str) -> bool:
    """`Class.attribute` (or a module-level name) is defined in the Python file `path`."""
    body = _parsed(path).body
    for part in dotted.split("."):
        node = _names(body).get(part)
        if node is None:
            return False
        body = node.body if isinstance(node, ast.ClassDef) else []
    return True


def _module(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def resolves(name: str) -> bool:
    """A module, or a name defined in one, read from the source (nothing is imported); `app.Model`
    is a model of the app."""
    parts = name.split(".")
    if NOT_PYTHON.search(name):
        return True
    for length in range(len(parts), 0, -1):
        module = _module(parts[:length])
        if module is None:
            continue
        rest = ".".join(parts[length:])
        if not rest or defined_in(module, rest):
            return True
        # `app.Model` and `app.Model.field`: a model of the app (models.py or a models/ package).
        models = _module([parts[0], "models"])
        return length == 1 and models is not None and defined_in(models, rest)
    return False


TRACKED = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
FILE_NAMES = {Path(name).name for name in TRACKED}


def unknown_names(doc: Path) -> list[str]:
    prose = _prose(doc)
    unknown = [name for name in sorted(set(DOTTED.findall(prose))) if not resolves(name)]
    for path, name in sorted(set(FILE_REFERENCE.findall(prose))):
        found = [base / path for base in (ROOT, doc.parent, ROOT / "tests") if (base / path).is_file()]
        if not found or not defined_in(found[0], name):
            unknown.append(f"{path}:{name}")
    unknown += [name for name in sorted(set(BARE_FILE.findall(prose))) if name not in FILE_NAMES]
    return unknown


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_dotted_name_and_file_reference_is_defined(doc):
    assert unknown_names(doc) == [], f"{doc.relative_to(ROOT)} names code that does not exist"


def test_the_checks_catch_a_broken_link_anchor_and_name(tmp_path):
    """The two tests above can fail, and pass what is right."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "other.md").write_text("# Other\n## 3. The database\n## Twice\n## Twice\n")
    doc = docs / "made-up.md"
    doc.write_text(
        "[ok](other.md#3-the-database) [again](other.md#twice-1) [here](#made-up) [png](../chart.png)\n"
        "# Made up\n[nested](docs/other.md) [gone](#no-such-heading) [heading](other.md#3-database)\n"
        "```\n[in a code block](nowhere.md)\n```\n"
        "`oauthflows.pages.views.AuthorizeView`, `scopes.jwt`, `accounts.AccountAuditEvent`, `config.E003`,\n"
        "`oauthflows/token/oauth2.py:Validator.validate_code`, `tier.py`; and stale: `config.accounts.LoginView`,\n"
        "`oauthflows/token/oauth2.py:NoSuchThing`, `oauthflows/pages/views.py:TokenView`, `test_claims.py`.\n"
    )
    (tmp_path / "chart.png").write_bytes(b"")
    assert broken_links(doc) == ["docs/other.md", "#no-such-heading", "other.md#3-database"]
    assert unknown_names(doc) == [
        "config.accounts.LoginView",
        "oauthflows/pages/views.py:TokenView",
        "oauthflows/token/oauth2.py:NoSuchThing",
        "test_claims.py",
    ]
    # And the real docs give them something to check.
    prose = " ".join(_prose(doc) for doc in DOCS)
    assert len(set(DOTTED.findall(prose))) > 50 and len(set(FILE_REFERENCE.findall(prose))) > 20
    assert sum(len(LINK.findall(_outside_code_blocks(doc))) for doc in DOCS) > 50


# --- the same names in the comments and docstrings of the code ---------------------------------


def code_prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of each comment and docstring of a Python source."""
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
            and isinstance(node.body[0].value.value, str)
        ):
            found.append((node.body[0].lineno, node.body[0].value.value))
    return found


# A path in a comment is checked when it starts in a folder of ours; others are a library's files
# (`account/internal/flows/…`) or template names (`admin/oauthclients/…`).
OUR_FOLDERS = (*PACKAGES, "tests", "docs", "examples", "bench", "templates", "static", "locale")


def unknown_names_in_code(path: Path) -> list[str]:
    unknown = []
    for line, text in code_prose(path.read_text(encoding="utf-8")):
        for file in sorted(set(PATH.findall(URL.sub(" ", text)))):
            if file.split("/", 1)[0] in OUR_FOLDERS and not any(
                (base / file).exists() for base in (ROOT, path.parent, ROOT / "tests")
            ):
                unknown.append(f"{line}: {file}")
        unknown += [f"{line}: {name}" for name in sorted(set(DOTTED.findall(text))) if not resolves(name)]
        for file, name in sorted(set(FILE_REFERENCE.findall(text))):
            found = [base / file for base in (ROOT, path.parent, ROOT / "tests") if (base / file).is_file()]
            if not found or not defined_in(found[0], name):
                unknown.append(f"{line}: {file}:{name}")
    return unknown


PYTHON = [ROOT / name for name in TRACKED if name.endswith(".py") and (ROOT / name).is_file()]


def test_every_name_and_path_in_a_comment_or_docstring_exists():
    found = {str(path.relative_to(ROOT)): names for path in PYTHON if (names := unknown_names_in_code(path))}
    assert found == {}, "comments and docstrings name code that does not exist"


def test_the_code_check_catches_a_stale_name(tmp_path):
    module = tmp_path / "stale.py"
    module.write_text(
        '"""Served by oauthflows.views.TokenView (moved), and oauthflows.pages.views.AuthorizeView."""\n'
        "# The login: config.accounts.LoginView; the model field profiles.Profile.interface_language.\n"
        "# See oauthflows/token/oauth2.py:Validator and oauthflows/token/oauth2.py:NoSuchThing;\n"
        "# tests/config/test_paths.py, gone; account/internal/flows/login.py, a library's.\n"
        "x = 'oauthflows.views.Ignored'  # a string, not prose\n"
    )
    assert unknown_names_in_code(module) == [
        "2: config.accounts.LoginView",
        "3: oauthflows/token/oauth2.py:NoSuchThing",
        "4: tests/config/test_paths.py",
        "1: oauthflows.views.TokenView",
    ]
    assert len(PYTHON) > 300
