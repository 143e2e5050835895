from django.urls import path

from accounts.views import SecurityView

urlpatterns = [
    path("security/", SecurityView.as_view(), name="account_security"),
]
