"""allauth's social-account adapter: our identity providers, and who an upstream sign-in is.

Providers come from accounts.models.IdentityProvider (secret sealed at rest), never from
allauth's SocialApp table; every one signs in with PKCE and a nonce (accounts.upstream). Who the
sign-in names is accounts.identity's one rule: the (provider, sub) link, else an address the
provider vouches for (`email_verified`, one of its domains) and an account here proved. An address
an account merely claimed never joins the sign-in to that account: the person the provider vouches
for gets their own account with it, and the claimant loses it (audited). An upstream sign-in never
grants staff status.
"""

import requests
from allauth.account.utils import get_next_redirect_url
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter, get_adapter
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.base.constants import AuthProcess
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import render
from django.utils.translation import gettext_lazy

from accounts.audit import account_audit_record
from accounts.identity import (
    address_holder,
    unproven_address_release,
    upstream_email_vouched,
    upstream_person,
)
from accounts.models import AccountAuditAction, IdentityProvider
from accounts.selectors import EnforcedStep, enforced_step_refusal, identity_provider_secret
from accounts.upstream import upstream_nonce_matches


def _social_app(provider: IdentityProvider):
    """allauth's app for `provider`; None when its client secret does not open (a misconfiguration,
    logged once: accounts.selectors.identity_provider_secret), so that the provider is not offered
    and the login page still renders for everyone else."""
    secret = identity_provider_secret(provider=provider)
    if secret is None:
        return None
    return SocialApp(
        provider="openid_connect",
        provider_id=provider.slug,
        name=provider.name,
        client_id=provider.client_id,
        secret=secret,
        settings={
            "server_url": provider.issuer,
            "token_auth_method": "client_secret_basic",
            # RFC 7636 with S256, to every provider (accounts.upstream adds the nonce to it).
            "oauth_pkce_enabled": True,
        },
    )


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    error_messages = {
        **DefaultSocialAccountAdapter.error_messages,
        "enforced_provider": gettext_lazy(
            "Your organization signs you in through %(name)s: only an administrator can remove this link."
        ),
    }

    def list_apps(self, request, provider=None, client_id=None):
        providers = IdentityProvider.objects.all()
        if provider and provider != "openid_connect":
            providers = providers.filter(slug=provider)
        if client_id:
            providers = providers.filter(client_id=client_id)
        return [app for app in map(_social_app, providers) if app is not None]

    def is_open_for_signup(self, request, sociallogin) -> bool:
        # Just-in-time accounts for every configured provider, whatever OAUTH_SIGNUP says.
        return True

    def pre_social_login(self, request, sociallogin):
        record = IdentityProvider.objects.filter(slug=sociallogin.account.provider).first()
        if record is None:  # removed while the person was at the provider
            raise PermissionDenied("The identity provider is no longer configured.")
        id_token = (sociallogin.account.extra_data or {}).get("id_token")
        if not upstream_nonce_matches(state=sociallogin.state, id_token=id_token):
            # allauth then shows its "sign-in failed" page (its callback view catches this).
            raise PermissionDenied("The ID token does not answer this sign-in (nonce).")
        email = sociallogin.user.email or ""
        claimed = [a.verified for a in sociallogin.email_addresses if a.email.lower() == email.lower()]
        # Its email_verified counts only where it vouches (accounts.identity), for the addresses
        # allauth then stores and for our ID tokens alike.
        for address in sociallogin.email_addresses:
            address.verified = upstream_email_vouched(
                provider=record, email=address.email, email_verified=address.verified
            )
        if sociallogin.is_existing:
            return
        email_verified = claimed[0] if claimed else None
        person = upstream_person(
            provider=record, sub=sociallogin.account.uid, email=email or None, email_verified=email_verified
        )
        if person is not None:
            sociallogin.connect(request, person)
            account_audit_record(
                actor=person, user=person, action=AccountAuditAction.UPSTREAM_ACCOUNT_LINKED, provider=record.slug
            )
            return
        if (sociallogin.state or {}).get("process") == AuthProcess.CONNECT:
            return  # allauth joins it to the signed-in account: no account is made, no address taken
        holder = address_holder(email=email) if email else None
        if holder is None:
            return  # a new account, just in time
        if upstream_email_vouched(provider=record, email=email, email_verified=email_verified):
            # Nobody here proved it (else upstream_person had found them): the person the provider
            # vouches for gets a new account with it, and whoever only typed it loses it.
            unproven_address_release(provider=record, email=email)
            return
        account_audit_record(
            actor=None, user=holder, action=AccountAuditAction.UPSTREAM_LINK_REFUSED, provider=record.slug
        )
        raise ImmediateHttpResponse(render(request, "accounts/upstream_refused.html", status=403))

    def populate_user(self, request, sociallogin, data):
        user = super().populate_user(request, sociallogin, data)
        user.is_staff = user.is_superuser = False  # never staff from upstream
        return user

    def validate_disconnect(self, account, accounts) -> None:
        # An account its organization's provider is the only way in for stays linked until an
        # administrator unlinks it (docs/accounts.md, "Enforced domains").
        provider = enforced_step_refusal(user=account.user, step=EnforcedStep.UNLINK)
        if provider is not None and account.provider == provider.slug:
            # allauth's validation_error fills placeholders by position; ours are named (translators).
            raise ValidationError(
                self.error_messages["enforced_provider"] % {"name": provider.name}, code="enforced_provider"
            )
        super().validate_disconnect(account, accounts)


def upstream_login_redirect(request, *, provider: IdentityProvider, login_hint: str = "", auth_params=None):
    """Start a sign-in at `provider` from this (CSRF-checked) request, coming back to its `next`."""
    try:
        client = get_adapter().get_provider(request, provider.slug)
    except SocialApp.DoesNotExist:
        # Not offered: its client secret does not open (logged; `check --deploy` and /readyz say so).
        context = {"provider": provider, "misconfigured": True}
        return render(request, "accounts/upstream_unavailable.html", context, status=503)
    try:
        return _redirect(request, client, login_hint=login_hint, auth_params=auth_params)
    except (requests.RequestException, KeyError, ValueError):
        # Its discovery document could not be read: say so rather than fail (no path is a 500).
        return render(request, "accounts/upstream_unavailable.html", {"provider": provider}, status=502)


def _redirect(request, client, *, login_hint: str, auth_params):
    params = client.get_auth_params()
    # OpenID Connect Core §3.1.2.1: the address typed here, so that the provider need not ask again.
    if login_hint:
        params["login_hint"] = login_hint
    params.update(auth_params or {})
    return client.redirect(request, AuthProcess.LOGIN, next_url=get_next_redirect_url(request), auth_params=params)
