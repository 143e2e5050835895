from django.urls import path

from operations import views

# The same views for requests from outside HEALTH_CHECK_NETWORKS, through the whole middleware stack.
urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
]
