"""django-allauth's account adapter: our sign-up switch and landing page (docs/accounts.md)."""

from allauth.account.adapter import DefaultAccountAdapter
from django.conf import settings

from accounts.selectors import landing_url_for


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        # Accounts usually come from the scheduling service or an identity provider (OAUTH_SIGNUP).
        return settings.OAUTH_SIGNUP == "open"

    def get_login_redirect_url(self, request) -> str:
        # Without `next`: developers to their clients, everyone else to Connected apps.
        return landing_url_for(request.user)
