"""The login form: allauth's (username or email, ACCOUNT_LOGIN_METHODS), accepting the old field name."""

from allauth.account.forms import LoginForm as AllauthLoginForm
from django import forms
from django.http import QueryDict

from accounts.audit import account_audit_record
from accounts.models import AccountAuditAction
from accounts.selectors import enforcing_provider_for_user, provider_refusing_direct_login


class LoginForm(AllauthLoginForm):
    def __init__(self, *args, **kwargs):
        data = kwargs.get("data")
        # The login form's field was `username` before allauth (`login` now); scripts and
        # integrations that post `username` keep working.
        if isinstance(data, QueryDict) and "login" not in data and "username" in data:
            data = data.copy()
            data["login"] = data["username"]
            kwargs["data"] = data
        super().__init__(*args, **kwargs)

    def clean(self):
        cleaned = super().clean()
        user = getattr(self, "user", None)
        provider = enforcing_provider_for_user(user=user) if user is not None else None
        if provider is None:
            return cleaned
        # An organization's enforced provider is the only way in for its people (docs/accounts.md,
        # "The domain rule"), whatever identifier was typed. Superusers keep a password way in, with
        # their second factor (asked next), so that a broken provider cannot lock out those who fix it.
        if provider_refusing_direct_login(user=user) is None:
            account_audit_record(
                actor=user, user=user, action=AccountAuditAction.SUPERUSER_PASSWORD_LOGIN, provider=provider.slug
            )
            return cleaned
        raise forms.ValidationError(
            f"Your organization signs you in through {provider.name}: use \u201cContinue with {provider.name}\u201d.",
            code="enforced_provider",
        )
