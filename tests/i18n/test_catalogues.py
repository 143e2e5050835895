"""Every shipped language's catalogue is complete and sound, and its .mo is the .po compiled
(docs/languages.md, "The check"); each check catches what it is for."""

import shutil

import polib
import pytest
from django.conf import settings

from tests.i18n.catalogues import (
    PLURAL_COUNTS,
    catalogue_problems,
    compiled_problems,
    locale_dir,
    po_path,
    positional_placeholders,
    shipped_languages,
)


def test_at_least_one_language_besides_english_is_shipped():
    assert settings.LANGUAGE_CODE == "en"
    assert shipped_languages(), "LANGUAGES lists no language but English"


@pytest.mark.parametrize("language", shipped_languages())
def test_every_message_of_a_shipped_language_is_translated_and_sound(language):
    path = po_path(language)
    assert path.is_file(), f"{language} is in LANGUAGES without {path}"
    locale = path.parent.parent.name
    assert catalogue_problems(polib.pofile(str(path)), locale=locale) == []


def test_every_catalogue_has_every_language_ready_for_its_translator():
    """A .po for each language being translated, with the right plural forms in its header."""
    for locale, count in PLURAL_COUNTS.items():
        po = polib.pofile(str(locale_dir() / locale / "LC_MESSAGES" / "django.po"))
        assert f"nplurals={count};" in po.metadata["Plural-Forms"].replace(" ", ""), locale
        assert po.metadata["Language"] == locale


@pytest.mark.parametrize("po_file", sorted(str(path) for path in locale_dir().glob("*/LC_MESSAGES/django.po")))
def test_each_compiled_catalogue_is_its_po_compiled(po_file):
    from pathlib import Path

    assert compiled_problems(Path(po_file)) == []


def test_no_message_has_a_positional_placeholder():
    assert positional_placeholders(polib.pofile(str(po_path("de")))) == []


def test_shipped_languages_and_the_arabic_plural_forms_are_what_the_issue_asks():
    assert PLURAL_COUNTS["ar"] == 6
    assert {"de", "fr", "es", "ja", "ar"} <= set(PLURAL_COUNTS)


# --- each check fails when it should -------------------------------------------------------------


def _catalogue(*entries: polib.POEntry, plural_forms: str = "nplurals=2; plural=(n != 1);") -> polib.POFile:
    po = polib.POFile()
    po.metadata = {"Plural-Forms": plural_forms, "Content-Type": "text/plain; charset=UTF-8"}
    po.extend(entries)
    return po


def test_the_check_finds_an_untranslated_and_a_fuzzy_entry():
    untranslated = polib.POEntry(msgid="Allow", msgstr="")
    fuzzy = polib.POEntry(msgid="Deny", msgstr="Ablehnen", flags=["fuzzy"])
    problems = catalogue_problems(_catalogue(untranslated, fuzzy), locale="de")
    assert any(line.startswith("untranslated: 'Allow'") for line in problems)
    assert any(line.startswith("fuzzy: 'Deny'") for line in problems)


def test_the_check_finds_a_placeholder_missing_or_added():
    missing = polib.POEntry(msgid="%(name)s is deleted.", msgstr="Gelöscht.")
    added = polib.POEntry(msgid="Saved.", msgstr="%(name)s gespeichert.")
    renamed = polib.POEntry(msgid="One per line, 1 to {count}.", msgstr="Eine pro Zeile, 1 bis {anzahl}.")
    problems = catalogue_problems(_catalogue(missing, added, renamed), locale="de")
    assert "placeholder missing ['name']: '%(name)s is deleted.'" in problems
    assert "placeholder added ['name']: 'Saved.'" in problems
    assert any("placeholder missing ['{count}']" in line for line in problems)


def test_the_check_finds_markup_lost_in_a_translation():
    entry = polib.POEntry(msgid="Log out <bdi>%(username)s</bdi>", msgstr="%(username)s abmelden")
    (problem,) = catalogue_problems(_catalogue(entry), locale="de")
    assert problem.startswith("markup differs")


def test_the_check_finds_wrong_plural_forms():
    entry = polib.POEntry(
        msgid="%(counter)s passkey added.",
        msgid_plural="%(counter)s passkeys added.",
        msgstr_plural={0: "%(counter)s مفتاح", 1: "%(counter)s مفاتيح"},
    )
    problems = catalogue_problems(_catalogue(entry, plural_forms="nplurals=2; plural=(n != 1);"), locale="ar")
    assert "Plural-Forms says nplurals=2; ar has 6 forms" in problems


def test_a_form_for_one_may_leave_the_count_out():
    entry = polib.POEntry(
        msgid="%(counter)s passkey added.",
        msgid_plural="%(counter)s passkeys added.",
        msgstr_plural={0: "Ein Passkey hinzugefügt.", 1: "%(counter)s Passkeys hinzugefügt."},
    )
    assert catalogue_problems(_catalogue(entry), locale="de") == []


def test_the_check_finds_a_positional_placeholder():
    entry = polib.POEntry(msgid="Your organization signs you in through %s.", msgstr="")
    assert positional_placeholders(_catalogue(entry)) == [
        "positional placeholder: 'Your organization signs you in through %s.'"
    ]


def test_the_check_finds_a_compiled_catalogue_older_than_its_po(tmp_path):
    folder = tmp_path / "LC_MESSAGES"
    folder.mkdir()
    shutil.copy(po_path("de"), folder / "django.po")
    shutil.copy(po_path("de").with_suffix(".mo"), folder / "django.mo")
    assert compiled_problems(folder / "django.po") == []
    po = polib.pofile(str(folder / "django.po"))
    po.find("Allow").msgstr = "Zulassen"
    po.save()
    assert compiled_problems(folder / "django.po") == [
        f"{folder / 'django.mo'} is older than its .po: run manage.py compilemessages"
    ]
