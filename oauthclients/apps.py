from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OAuthClientsConfig(AppConfig):
    name = "oauthclients"
    verbose_name = _("OAuth clients")
