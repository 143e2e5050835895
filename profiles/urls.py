from django.urls import path

from profiles.apis import MeApi

urlpatterns = [path("me", MeApi.as_view(), name="me")]
