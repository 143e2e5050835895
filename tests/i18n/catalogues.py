"""What makes a translation catalogue one people can trust (docs/languages.md, "The check").

Each function returns the problems it finds, as lines a translator can act on; the tests in
test_catalogues.py assert there are none for every shipped language, and that each check does
catch what it is for.
"""

import re
from pathlib import Path

import polib
from django.conf import settings
from django.utils.translation import to_locale

# %(name)s and friends (python-format, and Django's blocktranslate variables), {name} (format_lazy),
# and positional %s / %d, which a translator cannot reorder: never in our messages.
NAMED = re.compile(r"%\(([A-Za-z_][A-Za-z0-9_]*)\)[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc]")
BRACED = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
POSITIONAL = re.compile(r"%(?!\()[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc]")
TAG = re.compile(r"</?([a-zA-Z][a-zA-Z0-9]*)\b[^>]*>")

# nplurals of each language (CLDR, as gettext and Django write them): Arabic has six forms.
PLURAL_COUNTS = {
    "ar": 6,
    "de": 2,
    "es": 3,  # singular, "millions" (un millón de), other
    "fr": 2,
    "it": 2,
    "ja": 1,
    "ko": 1,
    "nl": 2,
    "pt_BR": 2,
    "zh_Hans": 1,
}


def locale_dir() -> Path:
    return Path(settings.LOCALE_PATHS[0])


def po_path(language: str) -> Path:
    return locale_dir() / to_locale(language) / "LC_MESSAGES" / "django.po"


def shipped_languages() -> list[str]:
    """Every language the server serves but English, whose words are the msgids themselves."""
    return [code for code, _name in settings.LANGUAGES if code != settings.LANGUAGE_CODE]


def placeholders(text: str) -> list[str]:
    return sorted(NAMED.findall(text) + [f"{{{name}}}" for name in BRACED.findall(text)])


def tags(text: str) -> list[str]:
    return sorted(match.group(0) if match.group(0).startswith("</") else match.group(1) for match in TAG.finditer(text))


def _where(entry: polib.POEntry) -> str:
    context = f" [{entry.msgctxt}]" if entry.msgctxt else ""
    return f"{entry.msgid[:70]!r}{context}"


def translations(entry: polib.POEntry) -> list[str]:
    if entry.msgid_plural:
        return [entry.msgstr_plural[index] for index in sorted(entry.msgstr_plural)]
    return [entry.msgstr]


def catalogue_problems(po: polib.POFile, *, locale: str) -> list[str]:
    """Untranslated or fuzzy entries, placeholders or markup missing or added, wrong plural forms."""
    problems = []
    expected = PLURAL_COUNTS.get(locale)
    match = re.search(r"nplurals\s*=\s*(\d+)", po.metadata.get("Plural-Forms", ""))
    nplurals = int(match[1]) if match else None
    if expected is not None and nplurals != expected:
        problems.append(f"Plural-Forms says nplurals={nplurals}; {locale} has {expected} forms")
    for entry in po:
        if entry.obsolete:
            continue
        if "fuzzy" in entry.flags:
            problems.append(f"fuzzy: {_where(entry)}")
        texts = translations(entry)
        if not all(texts):
            problems.append(f"untranslated: {_where(entry)}")
            continue
        if entry.msgid_plural and nplurals is not None and len(texts) != nplurals:
            problems.append(f"{len(texts)} plural forms, not {nplurals}: {_where(entry)}")
        # Every form carries the singular's or the plural's placeholders (a form for one may leave
        # the count out, as "one passkey" may): nothing else, and nothing of them lost.
        sources = [entry.msgid] + ([entry.msgid_plural] if entry.msgid_plural else [])
        wanted = set(placeholders(entry.msgid_plural or entry.msgid))
        for text in texts:
            found = set(placeholders(text))
            if entry.msgid_plural:
                extra = found - wanted
                missing = wanted - found - ({"counter", "count"} & set(NAMED.findall(entry.msgid_plural)))
            else:
                extra, missing = found - wanted, wanted - found
            if extra:
                problems.append(f"placeholder added {sorted(extra)}: {_where(entry)}")
            if missing:
                problems.append(f"placeholder missing {sorted(missing)}: {_where(entry)}")
            if tags(text) != tags(sources[-1]):
                problems.append(f"markup differs ({tags(text)} for {tags(sources[-1])}): {_where(entry)}")
    return problems


def positional_placeholders(po: polib.POFile) -> list[str]:
    """Messages whose placeholders a translator could not reorder (%s, %d): name them instead."""
    problems = []
    for entry in po:
        for source in (entry.msgid, entry.msgid_plural):
            if source and POSITIONAL.search(source.replace("%%", "")):
                problems.append(f"positional placeholder: {_where(entry)}")
    return problems


def compiled_problems(po_file: Path) -> list[str]:
    """The committed .mo beside `po_file` says what the .po says (run compilemessages if not)."""
    mo_file = po_file.with_suffix(".mo")
    if not mo_file.is_file():
        return [f"{mo_file} is missing: run manage.py compilemessages"]
    po, mo = polib.pofile(str(po_file)), polib.mofile(str(mo_file))

    def table(catalogue, *, compiled: bool) -> dict:
        rows = {}
        for entry in catalogue:
            if not entry.msgid or entry.obsolete or "fuzzy" in entry.flags:
                continue
            texts = tuple(translations(entry))
            if not compiled and not any(texts):
                continue  # msgfmt leaves untranslated entries out
            rows[(entry.msgctxt, entry.msgid)] = texts
        return rows

    if table(po, compiled=False) != table(mo, compiled=True):
        return [f"{mo_file} is older than its .po: run manage.py compilemessages"]
    return []
