from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_in
from django.utils.translation import gettext_lazy as _


class ProjectConfig(AppConfig):
    """The project shell as an app, so that it can register the system checks that wire the apps
    together (config/checks.py) without an app importing `config`."""

    name = "config"
    label = "project"
    verbose_name = _("Project")

    def ready(self):
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        from config import checks  # noqa: F401 - registers the deploy checks

        # Every login (allauth's: password, passkey, upstream provider, after any second factor)
        # records the ID token's auth_time and a fresh sid in the new session (oauthflows).
        user_logged_in.connect(_session_login_record, dispatch_uid="oidc_session_login_record")


def _session_login_record(sender, request, user, **kwargs):
    # Imported here: this module is imported before the models, which oauthflows' services import.
    from oauthflows.pages.services import session_login_record

    if request is not None and hasattr(request, "session"):
        session_login_record(session=request.session)
