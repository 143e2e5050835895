"""What removing a second factor leads to, said on the page that removes it (issue 38: an
administrator removed their only passkey, the recovery codes went with it, and nothing said so)."""

from django import template
from django.conf import settings

from accounts.selectors import second_factor_is_last

register = template.Library()


@register.inclusion_tag("mfa/last_factor_warning.html", takes_context=True)
def last_factor_warning(context, authenticator) -> dict:
    user = context["request"].user
    last = authenticator is not None and second_factor_is_last(user=user, authenticator=authenticator)
    return {"last": last, "admin_closes": last and user.is_staff and settings.OAUTH_STAFF_MFA_REQUIRED}
