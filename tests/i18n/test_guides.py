"""Each shipped language has its integration guide, and the guide's introduction holds, word for
word, the catalogue's translation of GUIDE_INTRO, so that the developer pages replace it with this
server's address (oauthclients/guide.py; docs/languages.md, "The integration guide")."""

import pytest
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext

from oauthclients.guide import GUIDE_INTRO, _guide_path, guide_language, integration_guide_render

SHIPPED = [code for code, _name in settings.LANGUAGES if code != settings.LANGUAGE_CODE]


@pytest.mark.parametrize("language", SHIPPED)
def test_each_shipped_language_has_its_guide_with_the_catalogues_introduction(language):
    path = _guide_path(language)
    assert path.is_file(), f"{path.name} is missing"
    with translation.override(language):
        intro = gettext(GUIDE_INTRO)
        assert intro != GUIDE_INTRO, f"GUIDE_INTRO is not translated in {language}"
        assert intro in path.read_text(encoding="utf-8"), f"{path.name} does not hold the catalogue's introduction"
        assert guide_language() == language
        html = integration_guide_render(issuer="https://auth.test")
    assert "https://auth.test" in html
    assert "auth.example.com" not in html


def test_a_language_without_a_guide_shows_the_english_one(settings):
    settings.LANGUAGES = [*settings.LANGUAGES, ("eo", "Esperanto")]
    with translation.override("eo"):
        assert guide_language() == "en"


def test_the_language_choice_names_each_language_as_settings_does(browser):
    page = browser.get("/accounts/language/").content.decode()
    for _code, name in settings.LANGUAGES:
        assert name in page, name
