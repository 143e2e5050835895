"""allauth's forms, extended (ACCOUNT_FORMS, MFA_FORMS): the login form (username or email,
ACCOUNT_LOGIN_METHODS), accepting the old field name; the sign-up form, refusing an enforced
domain's address; the authenticator app's activation, whose code is then used up; a code typed
twice, said so; the passkey forms, refusing a credential that is not one as a wrong one; a new
passkey, a sign-in passkey unless unticked."""

import json
import struct

from allauth.account.forms import LoginForm as AllauthLoginForm
from allauth.account.forms import SignupForm as AllauthSignupForm
from allauth.mfa import app_settings as mfa_settings
from allauth.mfa.adapter import get_adapter as get_mfa_adapter
from allauth.mfa.base.forms import AuthenticateForm as AllauthAuthenticateForm
from allauth.mfa.base.forms import ReauthenticateForm as AllauthReauthenticateForm
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.forms import ActivateTOTPForm as AllauthActivateTOTPForm
from allauth.mfa.totp.internal.auth import TOTP
from allauth.mfa.webauthn import forms as webauthn_forms
from django import forms
from django.http import QueryDict
from django.utils.translation import gettext

from accounts.selectors import (
    enforcing_provider_for_email,
    provider_refusing_direct_login,
    totp_code_already_used,
)
from plumbing.requestparams import unicode_scalars_only


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
        # An organization's enforced provider is the only way in for its people (docs/accounts.md,
        # "Enforced domains"), whatever identifier was typed, and the provider is named only once
        # the password is right. Superusers keep a password way in, with their second factor (asked
        # next; audited in accounts.adapter.AccountAdapter.pre_login), so that a broken provider
        # cannot lock out those who fix it.
        provider = provider_refusing_direct_login(user=user) if user is not None else None
        if provider is None:
            return cleaned
        raise forms.ValidationError(
            gettext("Your organization signs you in through %(name)s: use “Continue with %(name)s”.")
            % {"name": provider.name},
            code="enforced_provider",
        )


class SignupForm(AllauthSignupForm):
    """allauth's sign-up form (ACCOUNT_FORMS), refusing an address of an enforced domain before
    anything is made: its organization's provider is the only way in for it, and a refused sign-up
    leaves no account and no address behind. The refusal names the domain's provider, whoever holds
    the address: it tells nothing about which addresses have accounts."""

    def clean_email(self):
        email = super().clean_email()
        provider = enforcing_provider_for_email(email=email or "")
        if provider is not None:
            raise forms.ValidationError(
                gettext(
                    "Your organization signs you in through %(name)s: use “Continue with %(name)s” "
                    "on the login page instead of signing up."
                )
                % {"name": provider.name},
                code="enforced_provider",
            )
        return email


class ActivateTOTPForm(AllauthActivateTOTPForm):
    """allauth checks the code typed at activation (validate_totp_code) but, unlike a sign-in's
    TOTP.validate_code, does not mark it used; the same code would then pass a second-factor step
    (a login's, a re-authentication) again within its period. RFC 6238 §5.2: after a successful
    validation, the same code is not accepted again.

    It is marked at once, in allauth's own used-code store (its cache, keyed by user and code, kept
    one period), through allauth's TOTP._mark_code_used (private, pinned in
    tests/accounts/test_allauth_internals.py): the key needs only the user, so the authenticator,
    stored a moment later in the same POST, is not needed yet, and no instant passes in which the
    app exists and its code is unused. If the activation then fails, the same code still activates
    (that check never reads the store); no other authenticator app of this user exists to refuse it.
    """

    def clean_code(self) -> str:
        code = super().clean_code()
        TOTP(Authenticator(user=self.user, type=Authenticator.Type.TOTP))._mark_code_used(code)
        return code


class _SaysAUsedCodeWasUsed:
    """allauth answers "Incorrect code." to the right code typed a second time within its period
    (the one typed at set-up, then at the next sign-in: RFC 6238 §5.2 refuses it). Say what
    happened and what to do instead. It is still a refused attempt (counted as allauth counts)."""

    def clean_code(self) -> str:
        try:
            return super().clean_code()
        except forms.ValidationError as refused:
            code = self.cleaned_data.get("code") or ""
            if refused.code == "incorrect_code" and totp_code_already_used(user=self.user, code=code):
                raise forms.ValidationError(
                    gettext(
                        "This code was already used. Wait for your authenticator app to show the next "
                        "one (a new code every %(seconds)s seconds), then enter that."
                    )
                    % {"seconds": mfa_settings.TOTP_PERIOD},
                    code="code_already_used",
                ) from refused
            raise


class AuthenticateForm(_SaysAUsedCodeWasUsed, AllauthAuthenticateForm):
    """The second step of a sign-in (MFA_FORMS["authenticate"])."""


class ReauthenticateForm(_SaysAUsedCodeWasUsed, AllauthReauthenticateForm):
    """A confirmation with the authenticator app (MFA_FORMS["reauthenticate"])."""


# --- passkeys: a credential that is not one is refused, never a 500 --------------------------------


class CredentialField(forms.JSONField):
    """allauth's hidden `credential` field, for JSON a browser's WebAuthn API writes: a lone UTF-16
    surrogate (a "\\ud800" escape, valid JSON) is refused before fido2 reads it or the database
    stores it (PostgreSQL refuses it), and the posted value shown again on the form's page is
    ASCII (a raw surrogate cannot be encoded into the page)."""

    def to_python(self, value):
        value = super().to_python(value)
        if not unicode_scalars_only(value):
            raise get_mfa_adapter().validation_error("incorrect_code")
        return value

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, cls=self.encoder)  # ensure_ascii: escapes, never a raw surrogate


# What fido2 raises reading a credential the browser did not make: a missing member ("rawId": a
# KeyError), a member of the wrong type, base64 or CBOR that does not decode, a structure cut short.
# allauth catches some of these (TypeError, ValueError in places), not all, and the doors are open
# without a sign-in (the passkey login). Only the reading and checking of the posted credential is
# wrapped: the database and our own code fail as themselves.
_MALFORMED_CREDENTIAL = (
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    OverflowError,
    RecursionError,
    NotImplementedError,
    struct.error,
)


def _credential_checked(check):
    """`check()` (allauth's reading and checking of the posted credential), with a credential fido2
    cannot read refused as allauth refuses a wrong one: a form error, the page or redirect it gives."""
    try:
        return check()
    except _MALFORMED_CREDENTIAL as error:
        raise get_mfa_adapter().validation_error("incorrect_code") from error


class AuthenticateWebAuthnForm(webauthn_forms.AuthenticateWebAuthnForm):
    """A passkey at the second step of a sign-in (MFA_FORMS "authenticate_webauthn")."""

    credential = CredentialField(required=True, widget=forms.HiddenInput)

    def clean_credential(self):
        return _credential_checked(super().clean_credential)


class LoginWebAuthnForm(webauthn_forms.LoginWebAuthnForm):
    """A passkey sign-in, without a password (MFA_FORMS "login_webauthn")."""

    credential = CredentialField(required=True, widget=forms.HiddenInput)

    def clean_credential(self):
        return _credential_checked(super().clean_credential)


class ReauthenticateWebAuthnForm(webauthn_forms.ReauthenticateWebAuthnForm):
    """A passkey confirming it is still the person (MFA_FORMS "reauthenticate_webauthn")."""

    credential = CredentialField(required=True, widget=forms.HiddenInput)

    def clean_credential(self):
        return _credential_checked(super().clean_credential)


class AddWebAuthnForm(webauthn_forms.AddWebAuthnForm):
    """A new passkey's registration (MFA_FORMS "add_webauthn"). It signs in on its own unless unticked
    ("passkey" means that to people; allauth's form leaves it a second factor by default); its default
    name is the device's (accounts.adapter.MFAAdapter.generate_authenticator_name)."""

    credential = CredentialField(required=True, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("initial", {}).setdefault("passwordless", True)
        super().__init__(*args, **kwargs)

    def clean(self):
        return _credential_checked(super().clean)


class SignupWebAuthnForm(webauthn_forms.SignupWebAuthnForm):
    """A sign-up by passkey (MFA_FORMS "signup_webauthn"; its page is off unless MFA_PASSKEY_SIGNUP_ENABLED)."""

    credential = CredentialField(required=True, widget=forms.HiddenInput)

    def clean(self):
        return _credential_checked(super().clean)
