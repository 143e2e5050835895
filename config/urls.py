from allauth.account import views as allauth_views
from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from accounts.views import LoginView
from config.home import home
from config.openapi import SwaggerOAuthRedirectView, SwaggerView
from oauthclients.views import client_logo
from scopes.metadata import protected_resource_metadata_urls
from scopes.views import ScopeCatalogApi

# Django's own /admin/login/ goes through the same login, second factor included (SECURITY.md,
# "Accounts and the login"): no door skips the factor.
admin.site.login = secure_admin_login(admin.site.login)

urlpatterns = [
    path("", home, name="home"),
    path("admin/", admin.site.urls),
    # django-allauth (accounts/, docs/accounts.md): our login view first, under the name the
    # templates use; allauth's own URLs for the rest (logout, password reset, email, second factors).
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", allauth_views.logout, name="logout"),
    path("accounts/", include("accounts.urls")),
    path("accounts/", include("allauth.urls")),
    path("settings/developer/", include("oauthclients.urls")),
    # Public: the consent screen and Connected apps show it; always this origin's re-encoded copy.
    path("logos/<str:client_id>.png", client_logo, name="client_logo"),
    path("", include("oauthflows.urls")),
    path("", include("operations.urls")),  # /healthz, /readyz (docs/operating.md)
    path("v2/schema/", SpectacularAPIView.as_view(), name="schema"),  # public: docs/walkthrough.md, "API documentation"
    path("v2/docs/", SwaggerView.as_view(url_name="schema"), name="api_docs"),
    path("v2/docs/oauth2-redirect.html", SwaggerOAuthRedirectView.as_view(), name="api_docs_oauth2_redirect"),
    path("v2/scopes", ScopeCatalogApi.as_view(), name="scope_catalog"),  # public: the catalog as data
    path("v2/", include("profiles.urls")),
    *protected_resource_metadata_urls(),  # RFC 9728: the /v2 API as a protected resource
]

handler400 = "plumbing.errors.bad_request"
handler404 = "plumbing.errors.page_not_found"
handler500 = "plumbing.errors.server_error"
