"""The language of every page and mail a person reads (docs/languages.md).

In this order:
1. the `ui_locales` of the authorization request (OpenID Connect Core §3.1.2.1): on the
   authorization endpoint's pages, and on the login that request leads to (`next`), where it is
   kept in the session for the steps that carry no `next` (the second factor, a passkey), until
   the request ends with a redirect to the app or a new request comes without one;
2. the signed-in person's own choice (`Profile.interface_language`, made on the language page of
   their account, unset until they make it; never the profile's `locale`, which apps write);
3. the browser's `Accept-Language`;
4. English (settings.LANGUAGE_CODE).

Machine paths (plumbing.paths: the token endpoints, /v2, the metadata documents) are let straight
through: no language is worked out there and no `Vary: Accept-Language` is added. The language is
undone after each page, so a request that skips this middleware never inherits the previous
page's language.
"""

from urllib.parse import parse_qs, urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.db import DatabaseError
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.decorators import method_decorator
from django.utils.translation import gettext, gettext_lazy
from django.views import View
from django.views.decorators.cache import never_cache

from plumbing.languages import language_from_accept_language, language_from_ui_locales, supported_language
from plumbing.paths import EndpointKind, endpoint_kind, is_machine_path
from profiles.selectors import profile_get_for_user
from profiles.services import profile_update

# The language an authorization request's ui_locales asked for, kept for the login it leads to.
SESSION_KEY = "ui_locales_language"
# Where the kept ui_locales language applies: the login, its steps, and the authorization pages.
_CARRIED_KINDS = frozenset({EndpointKind.ACCOUNT, EndpointKind.AUTHORIZATION, EndpointKind.OAUTH_PAGE})


def _authorization_ui_locales(request) -> tuple[bool, str | None]:
    """(whether this request belongs to an authorization request, its ui_locales): the request is
    one (the authorization endpoint, its Allow and Deny answers), or its `next` names one."""
    if endpoint_kind(request.path_info) == EndpointKind.AUTHORIZATION:
        return True, request.GET.get("ui_locales")
    next_url = request.GET.get("next")
    if not next_url:
        return False, None
    try:
        parts = urlsplit(next_url)
    except ValueError:
        return False, None
    # Only a path of this site (as accounts.views reads `next`).
    if parts.scheme or parts.netloc or parts.path != settings.OAUTH_AUTHORIZE_PATH:
        return False, None
    values = parse_qs(parts.query).get("ui_locales") or [None]
    return True, values[0]


def _carried_language(request) -> str | None:
    """Rule 1: ui_locales, from the request, else kept in the session for the login's steps."""
    session = getattr(request, "session", None)
    belongs, ui_locales = _authorization_ui_locales(request)
    if belongs:
        language = language_from_ui_locales(ui_locales)
        if session is not None:
            if language is None:
                if SESSION_KEY in session:
                    del session[SESSION_KEY]  # a new request that did not ask: nothing kept
            elif session.get(SESSION_KEY) != language:
                session[SESSION_KEY] = language  # written only when it changes
        return language
    if session is None or endpoint_kind(request.path_info) not in _CARRIED_KINDS:
        return None
    kept = session.get(SESSION_KEY)
    return supported_language(kept) if isinstance(kept, str) else None


def chosen_language(user) -> str | None:
    """Rule 2: the person's own choice, if they made one and it is still served."""
    if not getattr(user, "is_authenticated", False):
        return None
    return supported_language(profile_get_for_user(user=user).interface_language)


def request_language(request) -> str:
    """The language of the page answering `request` (the module's order)."""
    language = _carried_language(request)
    if language is None:
        try:
            language = chosen_language(getattr(request, "user", None))
        except DatabaseError:
            language = None  # the outage page follows, in the browser's language
    return language or language_from_accept_language(request.META.get("HTTP_ACCEPT_LANGUAGE")) or settings.LANGUAGE_CODE


def person_language(user) -> str:
    """The language of mail sent to `user` with no page to follow: their choice, else English."""
    return chosen_language(user) or settings.LANGUAGE_CODE


def first_language(request) -> str:
    """The language from what the request itself says (its ui_locales, its Accept-Language), with
    no session or database read: for what answers before the view (a rate limit's refusal)."""
    _belongs, ui_locales = _authorization_ui_locales(request)
    return (
        language_from_ui_locales(ui_locales)
        or language_from_accept_language(request.META.get("HTTP_ACCEPT_LANGUAGE"))
        or settings.LANGUAGE_CODE
    )


class LanguageMiddleware:
    """Activates the page's language for the request (pages only), and undoes it afterwards.

    In two steps, so that a request refused before its view (plumbing.ratelimit) reads no session
    and no user: first_language as the request comes in, then, once the view is known,
    request_language (the kept ui_locales, the person's choice) if it says otherwise."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_machine_path(request.path_info):
            return self.get_response(request)
        _activate(request, first_language(request))
        try:
            response = self.get_response(request)
        finally:
            translation.deactivate()
        patch_vary_headers(response, ("Accept-Language",))
        response.headers.setdefault("Content-Language", request.LANGUAGE_CODE)
        _end_of_authorization(request, response)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not is_machine_path(request.path_info):
            language = request_language(request)
            if language != request.LANGUAGE_CODE:
                _activate(request, language)
        return None


def _activate(request, language: str) -> None:
    translation.activate(language)
    request.LANGUAGE_CODE = language


def _end_of_authorization(request, response) -> None:
    """The authorization request ended with a redirect to the app: its ui_locales is no longer kept."""
    session = getattr(request, "session", None)
    if (
        session is not None
        and endpoint_kind(request.path_info) == EndpointKind.AUTHORIZATION
        and response.status_code in (301, 302, 303, 307, 308)
        and not response.get("Location", "").startswith("/")
        and SESSION_KEY in session
    ):
        del session[SESSION_KEY]


# --- the person's own choice, on their account pages ---------------------------------------------


class LanguageForm(forms.Form):
    language = forms.ChoiceField(
        label=gettext_lazy("Language of these pages and of our emails"), required=False, widget=forms.RadioSelect
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        automatic = gettext("Automatic: the language your browser asks for")
        # Each language in its own name, as people look for it.
        names = list(settings.LANGUAGES)  # config/settings.py names each language in itself
        self.fields["language"].choices = [("", automatic), *names]


@method_decorator(never_cache, name="dispatch")
class LanguageView(LoginRequiredMixin, View):
    """GET/POST /accounts/language/: the person's interface language (unset: automatic)."""

    template_name = "accounts/language.html"

    def get(self, request):
        current = profile_get_for_user(user=request.user).interface_language
        form = LanguageForm(initial={"language": current if supported_language(current) else ""})
        return render(request, self.template_name, {"form": form})

    def post(self, request):
        form = LanguageForm(request.POST)
        if not form.is_valid():
            return render(request, self.template_name, {"form": form}, status=400)
        language = form.cleaned_data["language"]
        profile_update(user=request.user, interface_language=language)
        request.session.pop(SESSION_KEY, None)  # the person's word now outranks an earlier app's
        # Said in the language just chosen (or the browser's, for automatic).
        translation.activate(
            language
            or language_from_accept_language(request.META.get("HTTP_ACCEPT_LANGUAGE"))
            or settings.LANGUAGE_CODE
        )
        messages.success(request, gettext("Your language is saved."))
        return HttpResponseRedirect(reverse("account_language"), status=303)
