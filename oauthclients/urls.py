from django.urls import path

from oauthclients import views

app_name = "developer"

urlpatterns = [
    path("", views.client_list, name="client_list"),
    path("clients/new/", views.client_create, name="client_create"),
    path("docs/integrating/", views.integration_guide, name="integration_guide"),
    path("clients/<str:client_id>/", views.client_detail, name="client_detail"),
    path("clients/<str:client_id>/edit/", views.client_update, name="client_update"),
    path("clients/<str:client_id>/logo.png", views.client_current_logo, name="client_logo"),
    # GET asks for confirmation; POST deletes.
    path("clients/<str:client_id>/delete/", views.client_delete, name="client_delete"),
    # POST only, one URL per action.
    path("clients/<str:client_id>/secrets/generate/", views.client_secret_create, name="client_secret_create"),
    path(
        "clients/<str:client_id>/secrets/<int:secret_id>/revoke/",
        views.client_secret_revoke,
        name="client_secret_revoke",
    ),
]
