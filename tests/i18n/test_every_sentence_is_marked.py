"""Every sentence a person reads is marked for translation, and the catalogue holds every marked
one (docs/languages.md, "The check"): a sentence typed into a template without `{% translate %}`,
or marked in the code but missing from locale/de, fails here rather than reach a page in English."""

import shutil
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.core.management import call_command

from tests.i18n.catalogues import po_path
from tests.i18n.template_text import our_template_files, unmarked_text


def test_our_templates_are_found():
    names = {path.relative_to(settings.BASE_DIR).as_posix() for path in our_template_files()}
    assert {"templates/base.html", "templates/oauth/consent.html", "templates/admin/index.html"} <= names


@pytest.mark.parametrize("template", [path.relative_to(settings.BASE_DIR).as_posix() for path in our_template_files()])
def test_no_sentence_of_a_template_is_left_unmarked(template):
    assert unmarked_text((Path(settings.BASE_DIR) / template).read_text()) == []


# --- the scanner finds what it is for, and only that --------------------------------------------


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("<p>Allow access</p>", ["Allow access"]),
        ('{% load i18n %}<h1>{% translate "Allow" %}</h1><p>Deny</p>', ["Deny"]),
        ("<p>Signed in as {{ name }}.</p>", ["Signed in as"]),
        ('<img src="x.png" alt="Logo of the app">', ["Logo of the app"]),
        ('<nav aria-label="Account pages"></nav>', ["Account pages"]),
        ('<input type="submit" value="Save">', ["Save"]),
        ('<input type="text" placeholder="Your name">', ["Your name"]),
        ("<p>Ihr Konto</p>", ["Ihr Konto"]),  # any language's words, not English alone
        ("<td>unverified</td>", ["unverified"]),
    ],
)
def test_the_scanner_finds_an_unmarked_sentence(source, found):
    assert unmarked_text(source) == found


@pytest.mark.parametrize(
    "source",
    [
        '{% load i18n %}<p>{% translate "Allow access" %}</p>',
        "<p>{% blocktranslate trimmed with name=app %}Allow {{ name }} access{% endblocktranslate %}</p>",
        "{% load i18n %}{% blocktranslate count counter=n %}{{ counter }} app{% plural %}{{ counter }} apps"
        "{% endblocktranslate %}",
        "{% comment %}A note for developers.{% endcomment %}{# another one #}<!-- and one in HTML -->",
        "<p><code>client_id</code> <code>PROFILE_READ BOOKING_READ</code></p><pre>curl -X POST https://x</pre>",
        "<script>document.title = 'Hello there';</script><style>p { content: 'a b'; }</style>",
        '<a class="brand" href="/">Scheduling API</a>',
        '<input type="hidden" name="post" value="yes"><meta name="viewport" content="width=device-width">',
        '<div class="app-{{ label }} change-form">{{ value }} · 42 — &rsaquo;</div>',
    ],
)
def test_the_scanner_passes_marked_sentences_names_and_code(source):
    assert unmarked_text(source) == []


# --- the catalogue holds every marked sentence ---------------------------------------------------

# As the Makefile's `messages` target: our code only.
SOURCES_LEFT_OUT = {".venv", ".git", "locale", "staticfiles", "tests", "bench", "examples", "docs", "node_modules"}


def _key(entry: polib.POEntry) -> tuple:
    return (entry.msgctxt, entry.msgid, entry.msgid_plural or None)


def missing_from(committed: polib.POFile, extracted: polib.POFile) -> list[str]:
    catalogue = {_key(entry) for entry in committed if not entry.obsolete}
    return [entry.msgid[:80] for entry in extracted if _key(entry) not in catalogue]


@pytest.fixture
def extract(tmp_path, settings, monkeypatch):
    """extract(extra={path: text}): the catalogue makemessages writes today for German, made beside
    a copy of the tree (links to our sources, plus `extra` files) so that nothing in locale/ is
    touched. Also returns the committed locale/de catalogue."""
    if shutil.which("xgettext") is None or shutil.which("msgmerge") is None:
        pytest.skip("GNU gettext (xgettext, msgmerge) is not installed: apt-get install gettext")
    committed = polib.pofile(str(po_path("de")))  # read before LOCALE_PATHS points at the copy
    base = Path(settings.BASE_DIR)

    def run(extra: dict[str, str] | None = None) -> tuple[polib.POFile, polib.POFile]:
        for entry in base.iterdir():
            if entry.name not in SOURCES_LEFT_OUT and not entry.name.startswith("."):
                (tmp_path / entry.name).symlink_to(entry)
        for relative, text in (extra or {}).items():
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / relative).write_text(text)
        (tmp_path / "locale").mkdir()
        settings.LOCALE_PATHS = [tmp_path / "locale"]
        monkeypatch.chdir(tmp_path)
        call_command(
            "makemessages", locale=["de"], symlinks=True, no_location=True, no_wrap=True, keep_pot=True, verbosity=0
        )
        return polib.pofile(str(tmp_path / "locale" / "django.pot")), committed

    return run


def test_the_catalogue_holds_every_marked_sentence(extract):
    extracted, committed = extract()
    assert len(extracted) > 300, "makemessages found too few messages: did it read our sources?"
    assert missing_from(committed, extracted) == [], (
        "run `make messages`, then translate the new entries in every shipped language"
    )


def test_the_catalogue_check_finds_a_sentence_marked_but_not_in_the_catalogue(extract):
    extracted, committed = extract(
        {
            "newapp/templates/newapp/page.html": '{% load i18n %}<p>{% translate "A sentence no catalogue has" %}</p>',
            "newapp/views.py": 'from django.utils.translation import gettext\n\nTEXT = gettext("Nor this one")\n',
        }
    )
    assert sorted(missing_from(committed, extracted)) == ["A sentence no catalogue has", "Nor this one"]
