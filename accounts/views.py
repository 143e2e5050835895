"""The login page: allauth's view, naming the app that sent the user and taking its login_hint."""

from urllib.parse import parse_qs, urlsplit

from allauth.account import views as allauth_views
from allauth.account.internal.flows.logout import logout
from allauth.usersessions.internal.flows.sessions import end_sessions
from allauth.usersessions.models import UserSession
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import redirect, render
from django.utils.decorators import method_decorator
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.generic import TemplateView, View

from accounts.audit import account_audit_record
from accounts.emails import verification_outcome_failed
from accounts.models import AccountAuditAction
from accounts.selectors import (
    EnforcedStep,
    authenticator_list_for_user,
    enforced_step_refusal,
    enforcing_provider_for_email,
    identity_provider_list_unavailable,
)
from accounts.socialadapter import upstream_login_redirect
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
    def post(self, request, *args, **kwargs):
        # An email at an enforced domain goes straight to its provider, the password unread: the
        # provider is the only way in for it (docs/accounts.md, "The domain rule"). Superusers of
        # that domain sign in with their username, password and second factor (accounts.forms).
        identifier = (request.POST.get("login") or request.POST.get("username") or "").strip()
        provider = enforcing_provider_for_email(email=identifier) if "@" in identifier else None
        if provider is not None:
            return upstream_login_redirect(request, provider=provider, login_hint=identifier)
        return super().post(request, *args, **kwargs)

    def get_initial(self):
        # OpenID Connect Core §3.1.2.1: the app's login_hint prefills the identifier (a GET only;
        # a failed POST shows what was typed).
        hint = login_hint_for(self.request.GET.get(self.redirect_field_name, ""))
        return {"login": hint} if hint else {}

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["next"] = context.get("redirect_field_value") or ""  # the request to come back to
        context["asking_client"] = asking_client_for(context["next"])
        # Providers configured but not offered (their client secret does not open): said, not hidden.
        context["unavailable_providers"] = identity_provider_list_unavailable()
        return context


@method_decorator(never_cache, name="dispatch")
class SecurityView(LoginRequiredMixin, TemplateView):
    """GET /accounts/security/: every way this account signs in, one link from every page's navigation."""

    template_name = "accounts/security.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["authenticators"] = authenticator_list_for_user(user=self.request.user)
        return context


@method_decorator(never_cache, name="dispatch")
class SignOutEverywhereView(LoginRequiredMixin, View):
    """POST /accounts/security/sign-out-everywhere/: every session of this account ends, this one
    included (a lost phone, a shared computer): one button on the sign-in methods page."""

    http_method_names = ["post"]

    def post(self, request):
        user = request.user
        sessions = list(UserSession.objects.filter(user_id=user.pk))
        end_sessions(request, sessions)
        if request.user.is_authenticated:  # a session signed in before sessions were recorded
            logout(request)
        account_audit_record(
            actor=user, user=user, action=AccountAuditAction.SIGNED_OUT_EVERYWHERE, sessions=len(sessions)
        )
        messages.success(request, gettext("You are signed out everywhere."))
        return redirect("account_login")


# The authorization request a password reset started from (the login page's link carries it), for
# the "log in and continue" link at the end of the reset: the mailed link usually opens in the same
# browser, whose session keeps it.
RESET_NEXT_SESSION_KEY = "accounts_reset_next"


class PasswordResetView(allauth_views.PasswordResetView):
    def dispatch(self, request, *args, **kwargs):
        next_url = request.GET.get("next") or request.POST.get("next") or ""
        # Only an authorization request of this site (login_hint_for's rule): `next` is anyone's to write.
        if _authorization_query(next_url):
            request.session[RESET_NEXT_SESSION_KEY] = next_url
        return super().dispatch(request, *args, **kwargs)


class PasswordResetFromKeyDoneView(allauth_views.PasswordResetFromKeyDoneView):
    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        next_url = self.request.session.pop(RESET_NEXT_SESSION_KEY, "")
        context["next"] = next_url if _authorization_query(next_url) else ""
        context["asking_client"] = asking_client_for(context["next"])
        return context


class EmailVerificationSentView(allauth_views.EmailVerificationSentView):
    """allauth's "verification sent" page, which says "we have sent an email" only when it went
    (accounts.emails): a refused mail is said so, with the way to have it sent again."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["mail_failed"] = verification_outcome_failed(self.request)
        return context


# --- the steps that would free an account from its organization's enforced provider ------------


def enforced_step_refused(request, *, user, step: EnforcedStep, email: str = ""):
    """The page refusing `step` to `user` (403, audited), or None when the step is allowed
    (accounts.selectors.enforced_step_refusal)."""
    provider = enforced_step_refusal(user=user, step=step, email=email)
    if provider is None:
        return None
    account_audit_record(
        actor=user, user=user, action=AccountAuditAction.ENFORCED_STEP_REFUSED, provider=provider.slug, step=step.value
    )
    context = {"provider": provider, "step": step}
    return render(request, "accounts/enforced_step_refused.html", context, status=403)


class EmailView(allauth_views.EmailView):
    """allauth's email page: an enforced account keeps its organization's address, and primary."""

    def post(self, request, *args, **kwargs):
        email = request.POST.get("email") or ""
        step = None
        if "action_remove" in request.POST:
            step = EnforcedStep.REMOVE_ADDRESS
        elif "action_primary" in request.POST:
            step = EnforcedStep.MAKE_PRIMARY
        if step is not None and request.user.is_authenticated:
            refused = enforced_step_refused(request, user=request.user, step=step, email=email)
            if refused is not None:
                return refused
        return super().post(request, *args, **kwargs)


class _NoPasswordForEnforcedAccounts:
    """A password of this site never signs an enforced account in: none is set or changed for it."""

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            refused = enforced_step_refused(request, user=request.user, step=EnforcedStep.SET_PASSWORD)
            if refused is not None:
                return refused
        return super().dispatch(request, *args, **kwargs)


class PasswordSetView(_NoPasswordForEnforcedAccounts, allauth_views.PasswordSetView):
    pass


class PasswordChangeView(_NoPasswordForEnforcedAccounts, allauth_views.PasswordChangeView):
    pass


class PasswordResetFromKeyView(allauth_views.PasswordResetFromKeyView):
    """allauth's reset link: it sets no password on an enforced account (the key stays unused)."""

    def form_valid(self, form):
        refused = enforced_step_refused(self.request, user=self.reset_user, step=EnforcedStep.SET_PASSWORD)
        return refused if refused is not None else super().form_valid(form)
