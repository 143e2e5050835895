"""allauth's social-account adapter: our identity providers, linked by (provider, sub) only.

Providers come from accounts.models.IdentityProvider (secret sealed at rest), never from
allauth's SocialApp table. An email links an upstream sign-in to an existing account only when
the provider is authoritative for its domain and says the address is verified (the nOAuth class
of takeovers); an upstream sign-in never grants staff status.
"""

from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.contrib.auth import get_user_model
from django.shortcuts import render

from accounts.audit import account_audit_record
from accounts.models import AccountAuditAction, IdentityProvider
from oauthclients.keys import secret_open


def _social_app(provider: IdentityProvider):
    from allauth.socialaccount.models import SocialApp

    return SocialApp(
        provider="openid_connect",
        provider_id=provider.slug,
        name=provider.name,
        client_id=provider.client_id,
        secret=secret_open(provider.client_secret_sealed),
        settings={"server_url": provider.issuer, "token_auth_method": "client_secret_basic"},
    )


def _domain(email: str) -> str:
    return email.rpartition("@")[2].lower()


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def list_apps(self, request, provider=None, client_id=None):
        providers = IdentityProvider.objects.all()
        if provider and provider != "openid_connect":
            providers = providers.filter(slug=provider)
        if client_id:
            providers = providers.filter(client_id=client_id)
        return [_social_app(record) for record in providers]

    def is_open_for_signup(self, request, sociallogin) -> bool:
        # Just-in-time accounts for every configured provider, whatever OAUTH_SIGNUP says.
        return True

    def pre_social_login(self, request, sociallogin):
        record = IdentityProvider.objects.filter(slug=sociallogin.account.provider).first()
        authoritative = set(record.domains) if record else set()
        # Its email_verified counts only for the domains it is authoritative for.
        for address in sociallogin.email_addresses:
            if _domain(address.email) not in authoritative:
                address.verified = False
        if sociallogin.is_existing:
            return
        email = sociallogin.user.email or ""
        existing = get_user_model().objects.filter(email__iexact=email).first() if email else None
        if existing is None:
            return
        verified = any(a.verified and a.email.lower() == email.lower() for a in sociallogin.email_addresses)
        if _domain(email) in authoritative and verified:
            sociallogin.connect(request, existing)
            account_audit_record(
                actor=existing, user=existing, action=AccountAuditAction.UPSTREAM_ACCOUNT_LINKED, provider=record.slug
            )
            return
        account_audit_record(
            actor=None,
            user=existing,
            action=AccountAuditAction.UPSTREAM_LINK_REFUSED,
            provider=sociallogin.account.provider,
        )
        raise ImmediateHttpResponse(render(request, "accounts/upstream_refused.html", status=403))

    def populate_user(self, request, sociallogin, data):
        user = super().populate_user(request, sociallogin, data)
        user.is_staff = user.is_superuser = False  # never staff from upstream
        return user
