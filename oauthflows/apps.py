from django.apps import AppConfig


class OAuthFlowsConfig(AppConfig):
    name = "oauthflows"
    verbose_name = "OAuth flows"
