"""The token tables in the admin: listed and viewed, never edited (the services and the OAuth flows
write them). Their models are django-oauth-toolkit's, swapped in oauthclients.models."""

from django.contrib import admin
from django.utils.translation import gettext, gettext_lazy

from oauthclients.admin import ReadOnlyAdmin
from oauthclients.models import AccessToken, Grant, RefreshToken

# Token rows: no token, code or checksum column, on the list or on the detail page.
_TOKEN_SEARCH_FIELDS = ("application__client_id", "application__name", "user__username")


@admin.register(AccessToken)
class AccessTokenAdmin(ReadOnlyAdmin):
    list_display = ("id", "application", "user", "scope", "expires", "created")
    list_select_related = ("application", "user")
    search_fields = _TOKEN_SEARCH_FIELDS
    fields = (
        "application",
        "user",
        "scope",
        "expires",
        "source_refresh_token",
        "act",
        "token_family",
        "assertion_issuer",
        "exchanged_from_row",
        "created",
        "updated",
    )
    readonly_fields = ("exchanged_from_row",)

    @admin.display(description=gettext_lazy("exchanged from"))
    def exchanged_from_row(self, token):
        """The token this one was exchanged from (RFC 8693), by row id: that row may have ended
        since (a routine refresh deletes it), and the reference is kept for the audit."""
        if token.exchanged_from_id is None:
            return "-"
        if AccessToken.objects.filter(pk=token.exchanged_from_id).exists():
            return gettext("Access token #%(id)s") % {"id": token.exchanged_from_id}
        return gettext("Access token #%(id)s (ended)") % {"id": token.exchanged_from_id}


@admin.register(RefreshToken)
class RefreshTokenAdmin(ReadOnlyAdmin):
    list_display = ("id", "application", "user", "created", "revoked")
    list_select_related = ("application", "user")
    search_fields = _TOKEN_SEARCH_FIELDS
    fields = ("application", "user", "access_token", "token_family", "created", "updated", "revoked")


@admin.register(Grant)
class GrantAdmin(ReadOnlyAdmin):
    list_display = ("id", "application", "user", "expires", "used_at", "created")
    list_select_related = ("application", "user")
    search_fields = _TOKEN_SEARCH_FIELDS
    fields = (
        "application",
        "user",
        "redirect_uri",
        "scope",
        "code_challenge_method",
        "expires",
        "used_at",
        "token_family",
        "created",
    )
