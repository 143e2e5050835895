from django.urls import path

from accounts.views import SecurityView, SignOutEverywhereView

urlpatterns = [
    path("security/", SecurityView.as_view(), name="account_security"),
    path("security/sign-out-everywhere/", SignOutEverywhereView.as_view(), name="account_sign_out_everywhere"),
]
