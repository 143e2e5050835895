"""The login page: allauth's view, naming the app that sent the user and taking its login_hint."""

from urllib.parse import parse_qs, urlsplit

from allauth.account import views as allauth_views
from django.conf import settings
from django.contrib.auth.mixins import LoginRequiredMixin
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from django.views.generic import TemplateView

from accounts.selectors import authenticator_list_for_user
from oauthclients.selectors import client_get


def _authorization_query(next_url: str) -> dict[str, list[str]]:
    """The query of an authorization request in `next` (a path on this site only), else {}."""
    if not next_url:
        return {}
    parts = urlsplit(next_url)
    if parts.scheme or parts.netloc or parts.path != settings.OAUTH_AUTHORIZE_PATH:
        return {}
    return parse_qs(parts.query)


def login_hint_for(next_url: str) -> str:
    """OpenID Connect's login_hint of the authorization request in `next`: the identifier to prefill."""
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


class LoginView(allauth_views.LoginView):
    def get_initial(self):
        # OpenID Connect Core §3.1.2.1: the app's login_hint prefills the identifier (a GET only;
        # a failed POST shows what was typed).
        hint = login_hint_for(self.request.GET.get(self.redirect_field_name, ""))
        return {"login": hint} if hint else {}

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["next"] = context.get("redirect_field_value") or ""  # the request to come back to
        context["asking_client"] = asking_client_for(context["next"])
        return context


@method_decorator(never_cache, name="dispatch")
class SecurityView(LoginRequiredMixin, TemplateView):
    """GET /accounts/security/: every way this account signs in, one link from every page's navigation."""

    template_name = "accounts/security.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["authenticators"] = authenticator_list_for_user(user=self.request.user)
        return context
