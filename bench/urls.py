"""The bench's URLconf: the project's own (config.urls), plus the floor views under /floor/."""

from django.urls import include, path

from bench import floor
from config.urls import handler400, handler404, handler500
from config.urls import urlpatterns as project_urlpatterns

__all__ = ["handler400", "handler404", "handler500", "urlpatterns"]

urlpatterns = [path("floor/", include(floor.urlpatterns)), *project_urlpatterns]
