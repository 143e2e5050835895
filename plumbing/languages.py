"""The language of a page, read from what a request says (docs/languages.md, "Which language").

Parsing only, of values anyone can send: OpenID Connect's `ui_locales` and the browser's
`Accept-Language`, each mapped onto the languages this server ships (settings.LANGUAGES, the one
list: the middleware, the metadata's `ui_locales_supported` and the catalogue check all read it).
Which source wins is accounts.languages' decision; nothing here touches the database or a session.
"""

import re

from django.conf import settings
from django.utils import translation

# OpenID Connect Core §3.1.2.1: ui_locales is a space-separated list of BCP 47 tags. A value
# longer than this, or holding anything but such tags, is ignored whole (never an error).
UI_LOCALES_MAX_LENGTH = 200
# Django's own bound on the header it parses (ACCEPT_LANGUAGE_HEADER_MAX_LENGTH).
ACCEPT_LANGUAGE_MAX_LENGTH = 500
_TAG = re.compile(r"[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*")


def supported_language(tag: str) -> str | None:
    """The code (settings.LANGUAGES) of the shipped language serving BCP 47 `tag`, or None:
    de-AT is served by de, zh-CN by zh-hans, pt by pt-br."""
    if not tag or not _TAG.fullmatch(tag):
        return None
    try:
        return translation.get_supported_language_variant(tag.lower())
    except LookupError:
        return None


def language_from_ui_locales(value: str | None) -> str | None:
    """The first supported language of a `ui_locales` value (an unsupported tag before it is
    skipped), or None: absent, none supported, malformed or longer than UI_LOCALES_MAX_LENGTH."""
    if not value or len(value) > UI_LOCALES_MAX_LENGTH:
        return None
    tags = value.split(" ")
    if not all(_TAG.fullmatch(tag) for tag in tags if tag):
        return None
    for tag in tags:
        language = supported_language(tag) if tag else None
        if language is not None:
            return language
    return None


def _accept_language_tags(header: str) -> list[str]:
    """RFC 9110 §12.5.4: the tags of an Accept-Language header, by weight (then order); q=0 and
    malformed entries left out."""
    ranked = []
    for index, entry in enumerate(header.split(",")):
        tag, _, parameters = entry.strip().partition(";")
        weight = 1.0
        if parameters.strip():
            name, _, value = parameters.strip().partition("=")
            if name.strip().lower() != "q":
                continue
            try:
                weight = float(value)
            except ValueError:
                continue
            if not 0 < weight <= 1:  # also refuses nan
                continue
        tag = tag.strip()
        if tag != "*" and _TAG.fullmatch(tag):
            ranked.append((-weight, index, tag))
    return [tag for _weight, _index, tag in sorted(ranked)]


def language_from_accept_language(header: str | None) -> str | None:
    """The browser's most wanted language that this server ships, or None."""
    if not header or len(header) > ACCEPT_LANGUAGE_MAX_LENGTH:
        return None
    for tag in _accept_language_tags(header):
        language = supported_language(tag)
        if language is not None:
            return language
    return None


def ui_locales_supported() -> list[str]:
    """The served languages as BCP 47 tags (en, de, zh-Hans, pt-BR), for the metadata documents'
    `ui_locales_supported` (OpenID Connect Discovery §3, RFC 8414 §2)."""
    return [translation.to_locale(code).replace("_", "-") for code, _name in settings.LANGUAGES]
