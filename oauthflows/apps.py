from django.apps import AppConfig


class OAuthFlowsConfig(AppConfig):
    name = "oauthflows"
    verbose_name = "OAuth flows"

    def ready(self):
        from corsheaders.signals import check_request_enabled

        from oauthflows.cors import cors_allow_request

        check_request_enabled.connect(cors_allow_request, dispatch_uid="oauthflows.cors")

        from django.db.models.signals import post_save

        from oauthclients.models import OAuthClient
        from oauthflows.cors import cors_origins_changed

        # A client approved, rejected, edited or deleted: CORS answers are looked up again.
        post_save.connect(cors_origins_changed, sender=OAuthClient, dispatch_uid="oauthflows.cors_origins")
