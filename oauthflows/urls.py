from django.urls import path

from oauthflows import views

app_name = "oauth"

urlpatterns = [
    path("auth/oauth2/authorize", views.AuthorizeView.as_view(), name="authorize"),
    path("auth/oauth2/authorize/allow", views.AuthorizeAllowView.as_view(), name="authorize_allow"),
    path("auth/oauth2/authorize/deny", views.AuthorizeDenyView.as_view(), name="authorize_deny"),
    path("v2/auth/oauth2/token", views.TokenView.as_view(), name="token"),
]
