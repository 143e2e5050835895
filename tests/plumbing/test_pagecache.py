"""plumbing.pagecache: a page rendered once per what everyone sees, filled in per request."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import override_settings
from django.utils.safestring import mark_safe
from django.utils.translation import override

from plumbing import pagecache
from tests.factories import make_user

PAGE = (
    "{% load i18n %}{% get_current_language as lang %}{{ lang }}|{{ title }}|{{ slot }}|"
    "{% if maybe %}maybe={{ maybe }}{% else %}none{% endif %}|{% csrf_token %}|{{ user.get_username }}|"
    "{% if user.is_staff %}staff{% endif %}|{% for m in messages %}{{ m }}{% endfor %}"
)
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "OPTIONS": {
            "loaders": [("django.template.loaders.locmem.Loader", {"page.html": PAGE})],
            "context_processors": ["django.contrib.auth.context_processors.auth"],
        },
    }
]


@pytest.fixture
def request_of(rf):
    def make(user):
        request = rf.get("/")
        request.user = user
        request._messages = []  # no flash messages
        return request

    return make


@pytest.fixture(autouse=True)
def _fresh():
    with override_settings(TEMPLATES=TEMPLATES):
        pagecache.forget_pages()
        yield
    pagecache.forget_pages()


def body(response) -> str:
    return response.content.decode()


@pytest.mark.django_db
def test_slots_are_escaped_per_request_and_the_page_is_rendered_once(request_of, monkeypatch):
    renders = []
    real = pagecache._skeleton
    monkeypatch.setattr(pagecache, "_skeleton", lambda *a: renders.append(1) or real(*a))
    user = make_user("ann<&>")
    first = body(pagecache.render_filled(request_of(user), "page.html", {"title": "T"}, {"slot": "<x>"}))
    second = body(pagecache.render_filled(request_of(user), "page.html", {"title": "T"}, {"slot": 'a"b'}))
    assert len(renders) == 1
    assert first.startswith("en|T|&lt;x&gt;|none|") and "|ann&lt;&amp;&gt;|" in first
    assert second.startswith("en|T|a&quot;b|none|")
    token = first.split('value="')[1].split('"')[0]
    assert len(token) == 64 and token.isalnum()


@pytest.mark.django_db
def test_a_safe_slot_value_is_put_in_as_it_is(request_of):
    page = body(
        pagecache.render_filled(request_of(make_user()), "page.html", {"title": "T"}, {"slot": mark_safe("<b>")})
    )
    assert "|<b>|" in page


@pytest.mark.django_db
def test_an_empty_slot_takes_the_other_branch(request_of):
    user = make_user()
    filled = body(pagecache.render_filled(request_of(user), "page.html", {"title": "T"}, {"slot": "", "maybe": "yes"}))
    empty = body(pagecache.render_filled(request_of(user), "page.html", {"title": "T"}, {"slot": "", "maybe": ""}))
    assert "|maybe=yes|" in filled and "|none|" in empty


@pytest.mark.django_db
def test_the_language_the_staff_flag_and_the_shared_values_are_each_a_page_of_their_own(request_of):
    staff, person = make_user("boss", staff=True), make_user("someone")
    with override("de"):
        german = body(pagecache.render_filled(request_of(person), "page.html", {"title": "T"}, {"slot": "s"}))
    english = body(pagecache.render_filled(request_of(person), "page.html", {"title": "T"}, {"slot": "s"}))
    other = body(pagecache.render_filled(request_of(person), "page.html", {"title": "U"}, {"slot": "s"}))
    boss = body(pagecache.render_filled(request_of(staff), "page.html", {"title": "T"}, {"slot": "s"}))
    assert german.startswith("de|") and english.startswith("en|") and other.startswith("en|U|")
    assert "|staff|" in boss and "|staff|" not in english
    assert len(pagecache._kept) == 4


@pytest.mark.django_db
def test_a_safe_string_and_a_plain_one_of_the_same_text_are_different_pages(request_of):
    user = make_user()
    plain = body(pagecache.render_filled(request_of(user), "page.html", {"title": "<i>"}, {"slot": "s"}))
    safe = body(pagecache.render_filled(request_of(user), "page.html", {"title": mark_safe("<i>")}, {"slot": "s"}))
    assert "|&lt;i&gt;|" in plain and "|<i>|" in safe


def test_shared_values_must_compare_by_content():
    assert pagecache.frozen({"a": [1, "x"], "b": None}) == pagecache.frozen({"b": None, "a": [1, "x"]})
    with pytest.raises(TypeError, match="compare by content"):
        pagecache.frozen({"user": object()})


@pytest.mark.django_db
def test_an_anonymous_visitor_has_no_name_slot(request_of):
    page = body(pagecache.render_filled(request_of(AnonymousUser()), "page.html", {"title": "T"}, {"slot": "s"}))
    assert page.endswith("||")  # no name, not staff, no messages


@pytest.mark.django_db
def test_a_changed_setting_forgets_the_kept_pages(request_of):
    pagecache.render_filled(request_of(make_user()), "page.html", {"title": "T"}, {"slot": "s"})
    assert pagecache._kept
    with override_settings(STATIC_URL="/other-static/"):
        assert pagecache._kept == {}


@pytest.mark.django_db
def test_a_changed_file_forgets_the_kept_pages_and_the_oldest_page_goes_first(request_of, monkeypatch):
    from pathlib import Path

    from django.utils.autoreload import file_changed

    monkeypatch.setattr(pagecache, "PAGES_KEPT", 2)
    user = make_user()
    for title in ("one", "two", "three"):
        pagecache.render_filled(request_of(user), "page.html", {"title": title}, {"slot": "s"})
    assert [dict(key[-2][1])["title"][1] for key in pagecache._kept] == ["two", "three"]
    file_changed.send(sender=None, file_path=Path("templates/base.html"))
    assert pagecache._kept == {}


@pytest.mark.django_db
def test_typed_text_holding_a_markers_character_is_never_taken_for_a_slot(request_of):
    user = make_user("carol")
    typed = "App \ue0000\ue001 name"  # what a marker of the first slot looks like
    page = body(pagecache.render_filled(request_of(user), "page.html", {"title": typed}, {"slot": "s"}))
    assert f"|{typed}|" in page and "App carol name" not in page
    assert pagecache._kept == {}
