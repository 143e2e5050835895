from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """The project shell as an app, so that it can register the system checks that wire the apps
    together (config/checks.py) without an app importing `config`."""

    name = "config"
    label = "project"
    verbose_name = "Project"

    def ready(self):
        from config import checks  # noqa: F401 - registers the deploy checks
