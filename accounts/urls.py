from django.urls import path

from accounts.views import PasswordResetFromKeyDoneView, PasswordResetView, SecurityView, SignOutEverywhereView

urlpatterns = [
    # allauth's password reset, keeping the authorization request it started from (accounts.views).
    path("password/reset/", PasswordResetView.as_view(), name="account_reset_password"),
    path(
        "password/reset/key/done/", PasswordResetFromKeyDoneView.as_view(), name="account_reset_password_from_key_done"
    ),
    path("security/", SecurityView.as_view(), name="account_security"),
    path("security/sign-out-everywhere/", SignOutEverywhereView.as_view(), name="account_sign_out_everywhere"),
]
