"""django-allauth's adapters: our sign-up switch (and what a self sign-up must prove), landing page,
the enforced provider at every direct sign-in, re-authentication, mail (links from the issuer, a
refused mail never a 500: accounts.emails) and sealed MFA secrets."""

from urllib.parse import urlsplit

import qrcode
from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.internal.flows.login import (
    AUTHENTICATION_METHODS_SESSION_KEY,
    get_authentication_records,
    record_authentication,
)
from allauth.core import context as allauth_context
from allauth.mfa.adapter import DefaultMFAAdapter
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.shortcuts import render
from django.utils.html import format_html
from django.utils.translation import gettext

from accounts.audit import account_audit_record
from accounts.emails import (
    VERIFICATION_SENT_MESSAGE,
    mail_context,
    mail_failed,
    mail_send,
    mail_subject,
    verification_failure_message_add,
    verification_outcome_remember,
)
from accounts.models import AccountAuditAction
from accounts.passkeys import passkey_default_name
from accounts.selectors import (
    UPSTREAM_MFA_AMR,
    enforcing_provider_for_user,
    landing_url_for,
    login_is_recent,
    provider_refusing_direct_login,
    upstream_amr_of,
    upstream_auth_time_of,
    user_has_second_factor,
    user_has_totp,
)
from accounts.services import self_signup_record
from signing.keys import secret_open, secret_seal


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        # Accounts usually come from the scheduling service or an identity provider (OAUTH_SIGNUP).
        return settings.OAUTH_SIGNUP == "open"

    def get_login_redirect_url(self, request) -> str:
        # Without `next`: developers to their clients, everyone else to Connected apps.
        return landing_url_for(request.user)

    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        # The sign-up form's account proves an address before it signs in (accounts.stages); a
        # social sign-up's form (it carries the sociallogin) is the provider's person, not that.
        if commit and getattr(form, "sociallogin", None) is None:
            self_signup_record(user=user)
        return user

    def get_login_stages(self) -> list[str]:
        # allauth's email verification stage, "mandatory" for self sign-ups only (accounts.stages).
        ours = {"allauth.account.stages.EmailVerificationStage": "accounts.stages.EmailVerificationStage"}
        return [ours.get(path, path) for path in super().get_login_stages()]

    def pre_login(self, request, user, **kwargs):
        sociallogin = (kwargs.get("signal_kwargs") or {}).get("sociallogin")
        if sociallogin is not None:
            record_upstream_amr(request, sociallogin)
            return super().pre_login(request, user, **kwargs)
        # A password (accounts.forms.LoginForm refuses it first, naming the provider the same way)
        # or a passkey: no way around an organization's enforced provider.
        provider = enforcing_provider_for_user(user=user)
        if provider is not None:
            if provider_refusing_direct_login(user=user) is not None:
                return render(request, "accounts/enforced_provider.html", {"provider": provider}, status=403)
            # A superuser's break-glass way in (with their second factor, asked next): each use audited.
            account_audit_record(
                actor=user,
                user=user,
                action=AccountAuditAction.SUPERUSER_PASSWORD_LOGIN,
                provider=provider.slug,
                method=_direct_login_method(request, user),
            )
        return super().pre_login(request, user, **kwargs)

    # --- mail: every link from OAUTH_ISSUER; a mail server's refusal never a 500 (accounts.emails) ---

    def format_email_subject(self, subject: str) -> str:
        return mail_subject(subject)

    def send_mail(self, template_prefix: str, email: str, context: dict) -> None:
        request = context.get("request") or allauth_context.request
        message = self.render_mail(
            template_prefix, email, mail_context({"request": request, "email": email, **context})
        )
        mail_send(message, request=request, template_prefix=template_prefix, email=email)

    def add_message(self, request, level, message_template=None, message_context=None, extra_tags="", message=None):
        email = (message_context or {}).get("email")
        if message_template == VERIFICATION_SENT_MESSAGE and mail_failed(request=request, email=email):
            verification_failure_message_add(request=request, email=email)
            return
        super().add_message(request, level, message_template, message_context, extra_tags, message)

    def post_login(self, request, user, **kwargs):
        # A sign-up is a sign-in with the password just chosen: allauth records none for it, and
        # the new account was then asked to confirm its password seconds later (setting up a second
        # factor) and its ID tokens carried no `amr`. An upstream sign-up records its own.
        sociallogin = (kwargs.get("signal_kwargs") or {}).get("sociallogin")
        if kwargs.get("signup") and sociallogin is None and user.has_usable_password():
            record_authentication(request, user, method="password", signup=True)
        return super().post_login(request, user, **kwargs)

    def respond_email_verification_sent(self, request, user):
        # The page after a sign-up or a sign-in still to prove its address says whether the mail
        # went (accounts.views.EmailVerificationSentView); user is None for a sign-up naming an
        # address with an account, answered alike (enumeration prevention).
        verification_outcome_remember(request)
        return super().respond_email_verification_sent(request, user)

    def is_reauthentication_required(self, *, app: str, **kwargs) -> bool:
        # allauth's own sensitive views (adding or removing a second factor) follow our rule: a
        # sign-in within the timeout, with the second factor when the user has one.
        return not login_is_recent(request=allauth_context.request)

    def get_reauthentication_methods(self, user):
        # Someone with a second factor proves it is them with it (SECURITY.md: "a recent login
        # with it"): the password alone is not offered.
        methods = super().get_reauthentication_methods(user)
        if user_has_second_factor(user=user):
            methods = [method for method in methods if method["id"] != "reauthenticate"] or methods
            # The first is where a confirmation starts: someone with passkeys but no authenticator
            # app is offered their passkey, not a form asking for a code (recovery codes stay an
            # alternative on that page).
            if not user_has_totp(user=user):
                methods.sort(key=lambda method: method["id"] != "mfa_reauthenticate:webauthn")
        return methods


def _direct_login_method(request, user) -> str:
    """ "password" or "passkey": what allauth recorded for this sign-in just before pre_login."""
    records = get_authentication_records(request, user)
    last = records[-1] if records and isinstance(records[-1], dict) else {}
    return "passkey" if last.get("method") == "mfa" else "password"


def record_upstream_amr(request, sociallogin) -> None:
    """Copy the provider's `amr` and `auth_time` into this sign-in's session record (allauth wrote it
    just before): a provider that asked for a second factor satisfies the staff rule and our `acr`,
    and a recent sign-in is one the provider recently asked for (accounts.selectors.session_amr)."""
    amr = upstream_amr_of(sociallogin)
    records = request.session.get(AUTHENTICATION_METHODS_SESSION_KEY) or []
    for record in reversed(records):
        if (
            isinstance(record, dict)
            and record.get("method") == "socialaccount"
            and record.get("provider") == sociallogin.account.provider
            and record.get("uid") == sociallogin.account.uid
        ):
            record["upstream_amr"] = amr
            record["upstream_mfa"] = bool(UPSTREAM_MFA_AMR & set(amr))
            auth_time = upstream_auth_time_of(sociallogin)
            if auth_time is not None:
                record["upstream_auth_time"] = auth_time
            request.session.modified = True
            return


class MFAAdapter(DefaultMFAAdapter):
    """allauth's second factors, with their secrets sealed at rest and the relying party our issuer."""

    def encrypt(self, text: str) -> str:
        # TOTP secrets and the recovery-code seed: sealed under the signing keys' key-encryption key.
        return secret_seal(text)

    def decrypt(self, encrypted_text: str) -> str:
        return secret_open(encrypted_text)

    def get_totp_issuer(self) -> str:
        return settings.MFA_TOTP_ISSUER or urlsplit(settings.OAUTH_ISSUER).hostname

    def build_totp_svg(self, url: str) -> str:
        # Drawn into the page itself (mfa/totp/activate_form.html): allauth's is an <img> of a
        # data: URI, which the site's Content-Security-Policy (default-src 'self') blocks. The
        # markup holds numbers and a translated label only, so it is safe to put in the page.
        code = qrcode.QRCode(border=4)
        code.add_data(url)
        code.make(fit=True)
        matrix = code.get_matrix()  # quiet zone included
        modules = "".join(f"M{x},{y}h1v1h-1z" for y, row in enumerate(matrix) for x, dark in enumerate(row) if dark)
        return format_html(
            '<svg class="totp-qr" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {size}" width="220"'
            ' height="220" role="img" aria-label="{label}" shape-rendering="crispEdges">'
            '<rect width="{size}" height="{size}" fill="#fff"/><path d="{modules}" fill="#000"/></svg>',
            size=len(matrix),
            label=gettext("QR code for your authenticator app"),
            modules=modules,
        )

    def generate_authenticator_name(self, user, type) -> str:
        # allauth's "Master key", "Backup key": a passkey is named after the device it is added on.
        if type != Authenticator.Type.WEBAUTHN:
            return super().generate_authenticator_name(user, type)
        request = allauth_context.request
        taken = {
            authenticator.wrap().name
            for authenticator in Authenticator.objects.filter(user_id=user.pk, type=Authenticator.Type.WEBAUTHN)
        }
        return passkey_default_name(user_agent=request.headers.get("User-Agent", "") if request else "", taken=taken)

    def get_public_key_credential_rp_entity(self) -> dict[str, str]:
        # WebAuthn's relying party is OAUTH_ISSUER's host, whatever Host header a request carried.
        host = urlsplit(settings.OAUTH_ISSUER).hostname
        return {"id": host, "name": settings.MFA_TOTP_ISSUER or host}
