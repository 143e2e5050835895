from django.urls import path, re_path

from accounts.languages import LanguageView
from accounts.views import (
    EmailVerificationSentView,
    EmailView,
    PasswordChangeView,
    PasswordResetFromKeyDoneView,
    PasswordResetFromKeyView,
    PasswordResetView,
    PasswordSetView,
    SecurityView,
    SignOutEverywhereView,
)

urlpatterns = [
    # allauth's password reset, keeping the authorization request it started from (accounts.views).
    path("password/reset/", PasswordResetView.as_view(), name="account_reset_password"),
    path(
        "password/reset/key/done/", PasswordResetFromKeyDoneView.as_view(), name="account_reset_password_from_key_done"
    ),
    # allauth's pages whose steps would free an account from its organization's enforced provider
    # (accounts.selectors.enforced_step_refusal): the same paths and names, refusing those steps.
    re_path(
        r"^password/reset/key/(?P<uidb36>[0-9A-Za-z]+)-(?P<key>.+)/$",
        PasswordResetFromKeyView.as_view(),
        name="account_reset_password_from_key",
    ),
    # allauth's "verification sent" page, saying whether the mail went (accounts.emails).
    path("confirm-email/", EmailVerificationSentView.as_view(), name="account_email_verification_sent"),
    path("email/", EmailView.as_view(), name="account_email"),
    path("password/change/", PasswordChangeView.as_view(), name="account_change_password"),
    path("password/set/", PasswordSetView.as_view(), name="account_set_password"),
    path("security/", SecurityView.as_view(), name="account_security"),
    path("language/", LanguageView.as_view(), name="account_language"),
    path("security/sign-out-everywhere/", SignOutEverywhereView.as_view(), name="account_sign_out_everywhere"),
]
