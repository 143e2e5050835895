"""Logging in: the page names the app that sent the user, and a login without `next` lands where the user works."""

from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_safe

from oauthclients.selectors import client_exists_for_owner, client_get
from oauthflows.services import session_login_record


def landing_url_for(user) -> str:
    """A developer (anyone who owns a client) lands on the developer page; everyone else on Connected apps."""
    if client_exists_for_owner(owner=user):
        return reverse("developer:client_list")
    return reverse("oauth:connected_apps")


def _authorization_query(next_url: str) -> dict[str, list[str]]:
    """The query of an authorization request in `next` (a path on this site only), else {}."""
    if not next_url:
        return {}
    parts = urlsplit(next_url)
    if parts.scheme or parts.netloc or parts.path != settings.OAUTH_AUTHORIZE_PATH:
        return {}
    return parse_qs(parts.query)


def login_hint_for(next_url: str) -> str:
    """OpenID Connect's login_hint of the authorization request in `next`: the username to prefill."""
    hints = _authorization_query(next_url).get("login_hint", [])
    return hints[0][:150] if len(hints) == 1 and hints[0].isprintable() else ""


def asking_client_for(next_url: str):
    """The client named by an authorization request in `next`, if it is one users may be shown."""
    client_ids = _authorization_query(next_url).get("client_id", [])
    client = client_get(client_id=client_ids[0]) if len(client_ids) == 1 else None
    # Only a client users can authorize is named, with what was approved (SECURITY.md, "Review"):
    # `next` is anyone's to write, so a pending, rejected or deleted client, or a resource server,
    # would otherwise put unreviewed words on our login page.
    if client is None or not client.can_be_authorized:
        return None
    return client


class LoginView(auth_views.LoginView):
    redirect_authenticated_user = False

    def get_default_redirect_url(self):
        return landing_url_for(self.request.user)

    def get_initial(self):
        # OpenID Connect Core §3.1.2.1: the app's login_hint prefills the username (a GET only;
        # a failed POST shows what was typed).
        hint = login_hint_for(self.request.GET.get(self.redirect_field_name, ""))
        return {"username": hint} if hint else {}

    def form_valid(self, form):
        response = super().form_valid(form)
        session_login_record(session=self.request.session)  # the ID token's auth_time, and max_age's
        return response

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["asking_client"] = asking_client_for(context.get("next", ""))
        return context


@require_safe
@login_required
def home(request):
    return redirect(landing_url_for(request.user))
