"""Logging in: the page names the app that sent the user, and a login without `next` lands where the user works."""

from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_safe

from oauthclients.selectors import client_exists_for_owner, client_get


def landing_url_for(user) -> str:
    """A developer (anyone who owns a client) lands on the developer page; everyone else on Connected apps."""
    if client_exists_for_owner(owner=user):
        return reverse("developer:client_list")
    return reverse("oauth:connected_apps")


def asking_client_for(next_url: str):
    """The client named by an authorization request in `next`, if it is one users may be shown."""
    if not next_url:
        return None
    parts = urlsplit(next_url)
    if parts.scheme or parts.netloc or parts.path != settings.OAUTH_AUTHORIZE_PATH:
        return None
    client_ids = parse_qs(parts.query).get("client_id", [])
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

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["asking_client"] = asking_client_for(context.get("next", ""))
        return context


@require_safe
@login_required
def home(request):
    return redirect(landing_url_for(request.user))
