from django.urls import path

from oauthclients import views

app_name = "developer"

urlpatterns = [
    path("", views.client_list, name="client_list"),
]
