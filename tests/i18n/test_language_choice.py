"""Which language a page speaks: ui_locales, then the person's choice, then Accept-Language, then
English (accounts.languages); nothing of it on the machine paths (docs/languages.md)."""

import json
from urllib.parse import urlencode

import pytest
from django.core import mail
from django.test import Client, override_settings
from django.utils import translation

from oauthclients import services
from oauthflows.pages.views import consent_scopes_html
from profiles.models import Profile
from profiles.services import profile_update
from tests.factories import PASSWORD, make_client, make_tokens
from tests.oauthflows.helpers import authorize_url

GERMAN = "Erlauben"  # the consent page's Allow button
ENGLISH = ">Allow</button>"


def lang(response) -> str:
    html = response.content.decode()
    return html[html.index("<html") : html.index(">", html.index("<html")) + 1]


def consent(browser, approved_client, **params):
    return browser.get(authorize_url(approved_client, prompt="consent", **params), **params.pop("headers", {}))


def test_without_any_hint_a_page_is_english(client, db):
    response = client.get("/accounts/login/")
    assert lang(response) == '<html lang="en" dir="ltr">'
    assert response["Content-Language"] == "en" and "Accept-Language" in response["Vary"]


def test_the_browsers_language_is_the_first_it_wants_that_is_served(client, db):
    response = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="tlh, sv-SE;q=0.9, de-AT;q=0.8, en;q=0.5")
    assert lang(response) == '<html lang="de" dir="ltr">' and "Passwort vergessen?" in response.content.decode()


def test_a_language_the_browser_refuses_or_does_not_weigh_well_is_not_taken(client, db):
    assert 'lang="en"' in lang(client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de;q=0, en;q=0.1"))
    assert 'lang="en"' in lang(client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de;q=nan"))
    assert 'lang="en"' in lang(client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de;" + "x" * 600))


def test_the_persons_choice_outranks_the_browser(browser, end_user):
    profile_update(user=end_user, interface_language="de")
    response = browser.get("/settings/apps/", HTTP_ACCEPT_LANGUAGE="en")
    assert lang(response) == '<html lang="de" dir="ltr">' and "Verbundene Apps" in response.content.decode()


def test_the_profiles_locale_is_not_the_persons_choice(browser, end_user):
    """Apps write `locale` through /v2/me: it never changes the interface language."""
    profile_update(user=end_user, locale="de")
    assert 'lang="en"' in lang(browser.get("/settings/apps/"))


def test_ui_locales_outranks_the_persons_choice(browser, end_user, approved_client):
    profile_update(user=end_user, interface_language="de")
    english = browser.get(authorize_url(approved_client, prompt="consent", ui_locales="en"))
    assert ENGLISH in english.content.decode() and GERMAN not in english.content.decode()
    german = browser.get(authorize_url(approved_client, prompt="consent", ui_locales="de"), HTTP_ACCEPT_LANGUAGE="en")
    assert GERMAN in german.content.decode()


def test_an_unsupported_tag_before_a_supported_one_is_skipped(browser, approved_client):
    page = browser.get(authorize_url(approved_client, prompt="consent", ui_locales="tlh sv-SE de-CH en"))
    assert lang(page) == '<html lang="de" dir="ltr">' and GERMAN in page.content.decode()


@pytest.mark.parametrize(
    "ui_locales",
    ["de<script>", "de_DE", "de" + " x" * 150, "ü", "de-" + "a" * 9, "de\x00", "%"],
)
def test_a_malformed_or_enormous_ui_locales_is_ignored(browser, approved_client, ui_locales):
    page = browser.get(authorize_url(approved_client, prompt="consent", ui_locales=ui_locales))
    assert page.status_code == 200 and ENGLISH in page.content.decode()
    # Ignored, not an error: the next rule (here the browser's language) decides.
    page = browser.get(
        authorize_url(approved_client, prompt="consent", ui_locales=ui_locales), HTTP_ACCEPT_LANGUAGE="de"
    )
    assert page.status_code == 200 and GERMAN in page.content.decode()


def test_ui_locales_is_carried_through_the_login_and_ends_with_the_request(client, end_user, approved_client):
    start = authorize_url(approved_client, prompt="consent", ui_locales="de")
    to_login = client.get(start)
    assert to_login.status_code == 302 and to_login["Location"].startswith("/accounts/login/?next=")
    login_page = client.get(to_login["Location"])
    assert "Passwort vergessen?" in login_page.content.decode()
    # A step with no `next` of its own (a wrong password, the password reset page) keeps it.
    wrong = client.post("/accounts/login/", {"login": end_user.username, "password": "wrong"})
    assert 'lang="de"' in lang(wrong)
    assert 'lang="de"' in lang(client.get("/accounts/password/reset/"))
    signed_in = client.post(
        "/accounts/login/",
        {"login": end_user.username, "password": PASSWORD, "next": start.replace("&prompt=consent", "")},
    )
    assert signed_in.status_code == 302
    page = client.get(start)
    assert GERMAN in page.content.decode()
    # Allowed: the browser goes back to the app, and the app's language goes with the request.
    from tests.oauthflows.helpers import consent_form

    allow = client.post(start.replace("/authorize?", "/authorize/allow?"), consent_form(page.content.decode()))
    assert allow.status_code == 302 and allow["Location"].startswith(approved_client.redirect_uri_list[0])
    assert 'lang="en"' in lang(client.get("/accounts/security/"))


def test_a_new_request_without_ui_locales_does_not_inherit_the_last_ones(client, approved_client):
    client.get("/accounts/login/?" + urlencode({"next": authorize_url(approved_client, ui_locales="de")}))
    assert 'lang="de"' in lang(client.get("/accounts/password/reset/"))
    client.get("/accounts/login/?" + urlencode({"next": authorize_url(approved_client)}))
    assert 'lang="en"' in lang(client.get("/accounts/password/reset/"))


def test_a_later_page_outside_the_login_keeps_the_persons_own_language(browser, approved_client):
    browser.get(authorize_url(approved_client, prompt="consent", ui_locales="de"))
    assert 'lang="en"' in lang(browser.get("/settings/apps/"))


# --- nothing of it where machines call -----------------------------------------------------------


@pytest.fixture
def counted(monkeypatch):
    from accounts import languages

    calls = []
    original = languages.request_language

    def counting(request):
        calls.append(request.path)
        return original(request)

    monkeypatch.setattr(languages, "request_language", counting)
    return calls


def test_no_language_work_and_no_vary_on_the_token_endpoint_the_api_and_the_metadata(
    client, counted, end_user, approved
):
    access, refresh = make_tokens(end_user, approved.client)
    german = {"HTTP_ACCEPT_LANGUAGE": "de"}
    answers = [
        client.post(
            "/v2/auth/oauth2/token",
            {
                "grant_type": "refresh_token",
                "refresh_token": refresh,
                "client_id": approved.client.client_id,
                "client_secret": approved.secret.plaintext,
            },
            **german,
        ),
        client.get("/v2/me", HTTP_AUTHORIZATION=f"Bearer {access}", **german),
        client.get("/v2/me", **german),
        client.post("/v2/auth/oauth2/introspect", {"token": access}, **german),
        client.post("/v2/auth/oauth2/revoke", {"token": access}, **german),
        client.get("/.well-known/openid-configuration", **german),
        client.get("/.well-known/oauth-authorization-server", **german),
    ]
    assert answers[1].status_code == 200  # the token's answer, whatever it is, costs no language work
    assert counted == []
    for answer in answers:
        assert "Accept-Language" not in answer.get("Vary", "") and not answer.has_header("Content-Language")
    # The same counter sees a page: the test would notice the work if it were done.
    client.get("/accounts/login/", **german)
    assert counted == ["/accounts/login/"]


def test_a_machine_path_after_a_german_page_answers_in_english(client, db):
    assert 'lang="de"' in lang(client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de"))
    assert translation.get_language() == "en"  # undone once the page left
    scopes = client.get("/v2/scopes", HTTP_ACCEPT_LANGUAGE="de").json()
    assert {"name": "PROFILE_READ", "description": "View your profile"}.items() <= scopes["scopes"][8].items()
    me = client.get("/v2/me", HTTP_ACCEPT_LANGUAGE="de")
    assert me.status_code == 401 and "Ihr" not in me.content.decode()


def test_the_metadata_lists_exactly_the_languages_served(client, db, settings):
    settings.LANGUAGES = [("en", "English"), ("de", "Deutsch")]
    for path in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
        assert client.get(path).json()["ui_locales_supported"] == ["en", "de"]
    settings.LANGUAGES = [("en", "English"), ("de", "Deutsch"), ("zh-hans", "简体中文"), ("pt-br", "Português")]
    assert client.get("/.well-known/openid-configuration").json()["ui_locales_supported"] == [
        "en",
        "de",
        "zh-Hans",
        "pt-BR",
    ]


# --- caches of rendered text ---------------------------------------------------------------------


def test_the_cached_scope_list_is_kept_per_language(db):
    with translation.override("de"):
        german = consent_scopes_html(("PROFILE_READ",))
    with translation.override("en"):
        english = consent_scopes_html(("PROFILE_READ",))
    assert "Ihr Profil ansehen" in german and "View your profile" not in german
    assert "View your profile" in english and "Ihr Profil ansehen" not in english


def test_one_persons_language_never_reaches_another_persons_page(approved_client, end_user, other_developer):
    german, english = Client(), Client()
    german.force_login(end_user)
    english.force_login(other_developer)
    first = german.get(authorize_url(approved_client, prompt="consent"), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    second = english.get(authorize_url(approved_client, prompt="consent"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Ihr Profil ansehen" in first
    assert "View your profile" in second and "Ihr Profil ansehen" not in second and "Persönlich" not in second


# --- right to left -------------------------------------------------------------------------------


def test_an_arabic_page_is_right_to_left(client, db, settings):
    # Arabic is not shipped yet (its .po awaits its translator): switched on here as it will be.
    settings.LANGUAGES = [*settings.LANGUAGES, ("ar", "العربية")]
    response = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="ar")
    assert lang(response) == '<html lang="ar" dir="rtl">'
    assert 'lang="de" dir="ltr"' in lang(client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de"))


# --- the person's own choice ---------------------------------------------------------------------


def test_the_choice_is_unset_until_made_and_then_kept(browser, end_user):
    page = browser.get("/accounts/language/")
    assert page.status_code == 200 and 'value="" checked' in page.content.decode().replace(
        'name="language" value="" id="id_language_0" checked', 'value="" checked'
    )
    saved = browser.post("/accounts/language/", {"language": "de"})
    assert saved.status_code == 303
    end_user.profile.refresh_from_db()
    assert end_user.profile.interface_language == "de" and end_user.profile.locale == "en"
    after = browser.get(saved["Location"]).content.decode()
    assert "Ihre Sprache ist gespeichert." in after and 'lang="de"' in after[:200]
    browser.post("/accounts/language/", {"language": ""})
    end_user.profile.refresh_from_db()
    assert end_user.profile.interface_language == ""


def test_a_language_not_served_is_refused(browser, end_user):
    assert browser.post("/accounts/language/", {"language": "tlh"}).status_code == 400
    assert browser.post("/accounts/language/", {"language": "eo"}).status_code == 400  # Esperanto: not shipped
    assert not Profile.objects.filter(user=end_user).exclude(interface_language="").exists()


def test_an_app_cannot_set_the_interface_language(client, end_user, approved):
    access, _refresh = make_tokens(end_user, approved.client, scope="PROFILE_READ PROFILE_WRITE")
    me = client.get("/v2/me", HTTP_AUTHORIZATION=f"Bearer {access}").json()["data"]
    assert "interfaceLanguage" not in me and "interface_language" not in me
    refused = client.patch(
        "/v2/me",
        json.dumps({"interface_language": "de"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {access}",
    )
    assert refused.status_code == 400


# --- mail without a page -------------------------------------------------------------------------


@pytest.mark.parametrize(("chosen", "subject"), [("de", "wurde freigegeben"), ("", "was approved")])
def test_a_review_notice_speaks_the_owners_choice_else_english(
    owner, reviewer, chosen, subject, django_capture_on_commit_callbacks
):
    if chosen:
        profile_update(user=owner, interface_language=chosen)
    client_obj = make_client(owner).client
    # The reviewer's page is in another language: the notice is not.
    with translation.override("de" if not chosen else "en"), django_capture_on_commit_callbacks(execute=True):
        services.client_approve(client=client_obj, actor=reviewer)
    (notice,) = mail.outbox
    assert subject in notice.subject and "Calendar Sync" in notice.subject


@override_settings(LANGUAGES=[("en", "English")])
def test_with_english_alone_every_page_is_english(client, db):
    assert 'lang="en"' in lang(client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="de"))
