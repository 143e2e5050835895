from corsheaders.signals import check_request_enabled
from django.apps import AppConfig
from django.db.models.signals import post_save
from django.utils.translation import gettext_lazy as _


class OAuthFlowsConfig(AppConfig):
    name = "oauthflows"
    verbose_name = _("OAuth flows")

    def ready(self):
        # Imported in ready(): this module is imported while the app registry loads, before the models.
        from oauthclients.models import OAuthClient
        from oauthflows.cors import cors_allow_request, cors_origins_changed

        check_request_enabled.connect(cors_allow_request, dispatch_uid="oauthflows.cors")
        # A client approved, rejected, edited or deleted: CORS answers are looked up again.
        post_save.connect(cors_origins_changed, sender=OAuthClient, dispatch_uid="oauthflows.cors_origins")
