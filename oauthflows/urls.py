from django.urls import path

from oauthflows.discovery import metadata
from oauthflows.pages import logout, views
from oauthflows.registration import dynamic
from oauthflows.token import endpoints, userinfo

app_name = "oauth"

urlpatterns = [
    path("auth/oauth2/authorize", views.AuthorizeView.as_view(), name="authorize"),
    path("auth/oauth2/authorize/allow", views.AuthorizeAllowView.as_view(), name="authorize_allow"),
    path("auth/oauth2/authorize/deny", views.AuthorizeDenyView.as_view(), name="authorize_deny"),
    path("v2/auth/oauth2/token", endpoints.TokenView.as_view(), name="token"),
    path("v2/auth/oauth2/revoke", endpoints.RevokeView.as_view(), name="revoke"),
    path("v2/auth/oauth2/register", dynamic.RegistrationView.as_view(), name="register"),
    path(
        "v2/auth/oauth2/register/<str:client_id>",
        dynamic.RegistrationConfigurationView.as_view(),
        name="register_configuration",
    ),
    path("v2/auth/oauth2/introspect", endpoints.IntrospectView.as_view(), name="introspect"),
    path("v2/auth/oauth2/status-lists/<int:number>", metadata.StatusListView.as_view(), name="status_list"),
    path("v2/auth/oauth2/userinfo", userinfo.UserInfoView.as_view(), name="userinfo"),
    path("auth/oauth2/logout", logout.LogoutView.as_view(), name="logout"),
    path("settings/apps/", views.ConnectedAppsView.as_view(), name="connected_apps"),
    path("settings/apps/<str:client_id>/revoke/", views.ConnectedAppRevokeView.as_view(), name="connected_app_revoke"),
    path(".well-known/oauth-authorization-server", metadata.MetadataView.as_view(), name="metadata"),
    path(".well-known/jwks.json", metadata.JwksView.as_view(), name="jwks"),
    path(".well-known/openid-configuration", metadata.OpenIDConfigurationView.as_view(), name="openid_configuration"),
]
