"""django-allauth's adapters: our sign-up switch, landing page, re-authentication and sealed MFA secrets."""

from urllib.parse import urlsplit

import qrcode
from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.internal.flows.login import record_authentication
from allauth.core import context
from allauth.mfa.adapter import DefaultMFAAdapter
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.utils.html import format_html
from django.utils.translation import gettext

from accounts.passkeys import passkey_default_name
from accounts.selectors import (
    UPSTREAM_MFA_AMR,
    landing_url_for,
    login_is_recent,
    provider_refusing_direct_login,
    upstream_amr_of,
    user_has_second_factor,
    user_has_totp,
)
from signing.keys import secret_open, secret_seal


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        # Accounts usually come from the scheduling service or an identity provider (OAUTH_SIGNUP).
        return settings.OAUTH_SIGNUP == "open"

    def get_login_redirect_url(self, request) -> str:
        # Without `next`: developers to their clients, everyone else to Connected apps.
        return landing_url_for(request.user)

    def pre_login(self, request, user, **kwargs):
        sociallogin = (kwargs.get("signal_kwargs") or {}).get("sociallogin")
        if sociallogin is not None:
            record_upstream_amr(request, sociallogin)
        else:
            # A passkey is no way around an enforced domain's provider either (the password is
            # refused earlier, in accounts.forms.LoginForm, naming the provider the same way).
            provider = provider_refusing_direct_login(user=user)
            if provider is not None:
                from django.shortcuts import render

                return render(request, "accounts/enforced_provider.html", {"provider": provider}, status=403)
        return super().pre_login(request, user, **kwargs)

    def post_login(self, request, user, **kwargs):
        # A sign-up is a sign-in with the password just chosen: allauth records none for it, and
        # the new account was then asked to confirm its password seconds later (setting up a second
        # factor) and its ID tokens carried no `amr`. An upstream sign-up records its own.
        sociallogin = (kwargs.get("signal_kwargs") or {}).get("sociallogin")
        if kwargs.get("signup") and sociallogin is None and user.has_usable_password():
            record_authentication(request, user, method="password", signup=True)
        return super().post_login(request, user, **kwargs)

    def is_reauthentication_required(self, *, app: str, **kwargs) -> bool:
        # allauth's own sensitive views (adding or removing a second factor) follow our rule: a
        # sign-in within the timeout, with the second factor when the user has one.
        return not login_is_recent(request=context.request)

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


def record_upstream_amr(request, sociallogin) -> None:
    """Copy the provider's `amr` into this sign-in's session record (allauth wrote it just before):
    a provider that asked for a second factor satisfies the staff rule and our `acr`
    (accounts.selectors.session_amr)."""
    from allauth.account.internal.flows.login import AUTHENTICATION_METHODS_SESSION_KEY

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
        request = context.request
        taken = {
            authenticator.wrap().name
            for authenticator in Authenticator.objects.filter(user_id=user.pk, type=Authenticator.Type.WEBAUTHN)
        }
        return passkey_default_name(user_agent=request.headers.get("User-Agent", "") if request else "", taken=taken)

    def get_public_key_credential_rp_entity(self) -> dict[str, str]:
        # WebAuthn's relying party is OAUTH_ISSUER's host, whatever Host header a request carried.
        host = urlsplit(settings.OAUTH_ISSUER).hostname
        return {"id": host, "name": settings.MFA_TOTP_ISSUER or host}
