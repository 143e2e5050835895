"""A page rendered once for everyone who sees the same thing, then filled in per request.

The consent page shows one app's name, website, review state and the scopes it asks for: the
same HTML for every person who sees that app ask for those scopes in one language, except a few
values of the person and the request (their name, the CSRF token, the URLs that carry the
request's query). Rendering the Django template costs about a millisecond a request, most of what
the page cost over its floor (docs/performance.md, "The authorize page: where its milliseconds
go"); filling a kept copy costs a few microseconds.

`render_filled(request, template_name, shared, slots)`:
- renders the template once per (template, language, script prefix, signed in or not, staff or
  not, `shared`, which slots are empty) with a marker in each slot's place, and keeps the result
  in this process (the PAGES_KEPT newest, oldest pushed out first);
- per request, puts each slot's value in place of its marker, escaped as `{{ slot }}` would be
  (a value marked safe is put in as it is), and the CSRF token in place of `{% csrf_token %}`'s.

Why nobody sees another person's page, by construction:
- the kept copy is rendered from a plain Context holding `shared`, the slots' markers and a
  stand-in for the user (`is_authenticated`, `is_staff`, and `get_username` as a slot) — not the
  request, not the user: whatever the template reads is in the key, or is a slot and so a marker
  (what the base template reads from the context processors, such as `user_time_zone`, the
  caller puts in `shared`);
- `shared` may hold only values that compare by content (strings, numbers, frozen dataclasses,
  lists, tuples and dicts of them): anything else raises TypeError rather than key a page on an
  object's identity;
- a template may branch on a slot (`{% if signed_in_name %}`): whether each slot is empty is in
  the key, and an empty slot is rendered as "" with no marker.

The rule a template must keep: a slot is only ever shown as `{{ slot }}` (or a blocktranslate
argument), never through a filter, which would work on the marker instead of the value. Tests
compare each variant of the consent page with Django's own render of it
(tests/plumbing/test_pagecache.py, tests/oauthflows/test_consent_page_filled.py).

Flash messages are the request's own: with any to show, the page is rendered in full by
Django's `render()`, with the same values; so is a page whose shared values hold a marker's
character (Unicode's private use area, which a developer may type in an app's name).
"""

import dataclasses
import re
import threading

from django.contrib.messages import get_messages
from django.core.signals import setting_changed
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.template import Context
from django.template.loader import get_template
from django.urls import get_script_prefix
from django.utils.autoreload import file_changed
from django.utils.functional import Promise
from django.utils.html import conditional_escape
from django.utils.translation import get_language

# Unicode's private use area: never in a template's own text, and unchanged by HTML escaping.
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"
_MARK_RE = re.compile(f"{_MARK_OPEN}(\\d+){_MARK_CLOSE}")
CSRF_SLOT = "csrf_token"
USERNAME_SLOT = "username"
PAGES_KEPT = 512  # about 5 KB each: a few MB per process at most


def _marker(index: int) -> str:
    return f"{_MARK_OPEN}{index}{_MARK_CLOSE}"


class Unkeepable(ValueError):
    """A shared value holds a marker's character (a name typed with Unicode's private use
    characters): the page is rendered in full, so that no typed text is taken for a slot."""


def frozen(value):
    """`value` as a key that compares by content and type (a string and a safe string of the
    same text render differently, so they are different keys)."""
    if isinstance(value, Promise):  # a lazy translation: its text in the current language
        value = str(value)
    if isinstance(value, str) and (_MARK_OPEN in value or _MARK_CLOSE in value):
        raise Unkeepable(value)
    if value is None or isinstance(value, str | int | float | bool):
        return (type(value).__name__, value)
    if isinstance(value, dict):
        return ("dict", tuple(sorted((key, frozen(item)) for key, item in value.items())))
    if isinstance(value, list | tuple | frozenset):
        return (type(value).__name__, tuple(frozen(item) for item in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and value.__dataclass_params__.frozen:
        return (type(value).__qualname__, tuple(frozen(getattr(value, f.name)) for f in dataclasses.fields(value)))
    raise TypeError(f"a page's shared values must compare by content; {type(value).__name__} does not")


@dataclasses.dataclass(frozen=True)
class _UserStandIn:
    """What base.html reads of the user, with the name left to the request."""

    is_authenticated: bool
    is_staff: bool

    def get_username(self) -> str:
        return _marker(_SLOT_INDEX[USERNAME_SLOT])


# A slot's marker number, stable for the process (the kept pages depend on it only through the key).
_SLOT_INDEX: dict[str, int] = {USERNAME_SLOT: 0, CSRF_SLOT: 1}


def _slot_index(name: str) -> int:
    return _SLOT_INDEX.setdefault(name, len(_SLOT_INDEX))


@dataclasses.dataclass(frozen=True)
class _Skeleton:
    texts: tuple[str, ...]  # one more than slots
    slots: tuple[str, ...]  # the slot between texts[i] and texts[i + 1]

    def fill(self, values: dict[str, str]) -> str:
        parts = [self.texts[0]]
        for name, text in zip(self.slots, self.texts[1:], strict=True):
            parts.append(values[name])
            parts.append(text)
        return "".join(parts)


# The kept pages of this process, oldest first: a key's page is rendered again once it has been
# pushed out by PAGES_KEPT newer ones. Two threads may render the same page at once: no harm.
_kept: dict[tuple, _Skeleton] = {}
_keeping = threading.Lock()


def _skeleton(template, context: dict) -> _Skeleton:
    html = template.render(Context(context, autoescape=True))
    pieces = _MARK_RE.split(html)
    by_index = {index: name for name, index in _SLOT_INDEX.items()}
    return _Skeleton(texts=tuple(pieces[0::2]), slots=tuple(by_index[int(number)] for number in pieces[1::2]))


def render_filled(request, template_name: str, shared: dict, slots: dict[str, str]) -> HttpResponse:
    """The page `template_name` for this request: see the module's docstring."""
    user = request.user
    page_slots = {
        **slots,
        USERNAME_SLOT: user.get_username() if user.is_authenticated else "",
        CSRF_SLOT: get_token(request),
    }
    try:
        if list(get_messages(request)):
            raise Unkeepable("flash messages")  # this request's own
        key = (
            template_name,
            get_language(),
            get_script_prefix(),
            user.is_authenticated,
            user.is_staff,
            frozen(shared),
            tuple(sorted((name, bool(value)) for name, value in page_slots.items())),
        )
    except Unkeepable:
        return render(request, template_name, {**shared, **slots})
    skeleton = _kept.get(key)
    if skeleton is None:
        context = {
            **shared,
            "user": _UserStandIn(is_authenticated=user.is_authenticated, is_staff=user.is_staff),
            "messages": (),
            **{name: _marker(_slot_index(name)) if value else "" for name, value in page_slots.items()},
        }
        skeleton = _skeleton(get_template(template_name).template, context)
        with _keeping:  # threaded servers: one thread at a time adds and pushes out
            _kept[key] = skeleton
            while len(_kept) > PAGES_KEPT:
                _kept.pop(next(iter(_kept)))
    return HttpResponse(skeleton.fill({name: conditional_escape(value) for name, value in page_slots.items()}))


def forget_pages(**kwargs) -> None:
    """A template changed (the development server's reloader: a template's file, a catalogue's),
    or a setting read while rendering (STATIC_URL, LANGUAGES, ...): render anew."""
    _kept.clear()


setting_changed.connect(forget_pages)
file_changed.connect(forget_pages)
