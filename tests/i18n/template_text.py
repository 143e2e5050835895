"""The words of our templates that a person reads and no translation tag holds (docs/languages.md,
"The check"): what test_templates_are_marked.py refuses.

A template is read with Django's own lexer: the text between its tags, outside `{% translate %}`,
`{% blocktranslate %}…{% endblocktranslate %}` and comments, is what would reach a person
untranslated. Markup is taken away, but the attributes people read (`alt`, `title`,
`placeholder`, `aria-label`, a button's `value`, a description's `content`) are kept; so is
nothing inside `<script>`, `<style>`, `<code>`, `<pre>`, `<kbd>` and `<samp>` (code, not
sentences).
"""

import re
from pathlib import Path

from django.conf import settings
from django.template.base import Lexer, TokenType

# Names and code, not sentences: shown as they are in every language.
ALLOWED = {
    "Scheduling API",  # the service's name (base.html)
    "· Scheduling API",  # the title's suffix
}

_BREAK = "\x00"  # where a tag or a variable stood: words on either side are not one sentence
_OPENING = {"blocktranslate", "blocktrans", "comment", "verbatim"}
_CLOSING = {"endblocktranslate", "endblocktrans", "endcomment", "endverbatim"}
_CODE = re.compile(r"<(script|style|code|pre|kbd|samp)\b[^>]*>.*?</\1\s*>", re.S | re.I)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"<[^>]*>")
_READ_ATTRIBUTES = re.compile(
    r"""\b(alt|title|placeholder|aria-label|aria-description|aria-placeholder|aria-roledescription|label)\s*=\s*"""
    r"""(?:"([^"]*)"|'([^']*)')""",
    re.I,
)
_VALUE = re.compile(r"""\bvalue\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_BUTTON = re.compile(r"""^<input\b[^>]*\btype\s*=\s*["']?(submit|button|reset)\b""", re.I)
_DESCRIPTION = re.compile(r"""^<meta\b[^>]*\bname\s*=\s*["']?description\b[^>]*\bcontent\s*=\s*"([^"]*)\"""", re.I)
_ENTITY = re.compile(r"&[A-Za-z0-9#]+;")
# A word: two letters or more, of any script.
_WORD = re.compile(r"[^\W\d_]{2,}")
# An identifier, a CSS class being built, a parameter name: code (client_id, app-, change-form).
_CODE_WORD = re.compile(r"[\w.-]*[_-][\w.-]*")


def our_template_files() -> list[Path]:
    """Every template of ours: the project's directories and each of our apps' templates/."""
    base = Path(settings.BASE_DIR)
    folders = [Path(folder) for engine in settings.TEMPLATES for folder in engine.get("DIRS", [])]
    folders += [path for path in base.glob("*/templates") if path.is_dir()]
    files = set()
    for folder in folders:
        if ".venv" in folder.parts or "staticfiles" in folder.parts:
            continue
        files.update(path for pattern in ("*.html", "*.txt") for path in folder.rglob(pattern))
    return sorted(files)


def _outside_translation(source: str) -> str:
    """The template's text outside translation blocks and comments, tags and variables as breaks."""
    kept, inside = [], []
    for token in Lexer(source).tokenize():
        if token.token_type == TokenType.BLOCK:
            name = token.contents.split()[0] if token.contents.split() else ""
            if name in _OPENING:
                inside.append(name)
            elif name in _CLOSING and inside:
                inside.pop()
            kept.append(_BREAK)
        elif token.token_type == TokenType.TEXT and not inside:
            kept.append(token.contents)
        else:
            kept.append(_BREAK)
    return "".join(kept)


def _is_sentence(fragment: str) -> bool:
    text = " ".join(fragment.split())
    if not text or text in ALLOWED:
        return False
    words = [word for word in re.split(r"\s+", text) if _WORD.search(word)]
    return any(not _CODE_WORD.fullmatch(word) for word in words)


def unmarked_text(source: str) -> list[str]:
    """The fragments of `source` (a template) a person would read untranslated."""
    html = _CODE.sub(_BREAK, _HTML_COMMENT.sub(_BREAK, _outside_translation(source)))
    fragments = []
    for tag in _TAG.finditer(html):
        markup = tag.group(0)
        fragments += [double or single for _name, double, single in _READ_ATTRIBUTES.findall(markup)]
        if _BUTTON.match(markup):
            fragments += [double or single for double, single in _VALUE.findall(markup)]
        if description := _DESCRIPTION.match(markup):
            fragments.append(description.group(1))
    fragments += _ENTITY.sub(" ", _TAG.sub(_BREAK, html)).split(_BREAK)
    return [
        " ".join(piece.split()) for fragment in fragments for piece in fragment.split(_BREAK) if _is_sentence(piece)
    ]
