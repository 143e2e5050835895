"""The admin's page for which clients an organization's identity provider may assert for (ID-JAG,
oauthflows.token.idjag): each addition, change or removal goes through the audited services, as
`manage.py identityprovider allow-assertions` / `deny-assertions` do (a removal also ends the
access the provider's assertions granted), after a recent sign-in with the second factor
(accounts.middleware.RECENT_LOGIN_ADMIN_MODELS). Loaded by accounts.apps (a page of its own, beside the
identity providers' page)."""

from django.contrib import admin

from accounts.models import AssertionPolicy
from accounts.services import identity_provider_assertions_allow, identity_provider_assertions_deny


@admin.register(AssertionPolicy)
class AssertionPolicyAdmin(admin.ModelAdmin):
    list_display = ("provider", "client", "scopes", "created")
    list_select_related = ("provider", "client")
    list_filter = ("provider",)
    search_fields = ("provider__name", "client__name", "client__client_id")
    readonly_fields = ("created",)
    fields = ("provider", "client", "scopes", "created")

    def save_model(self, request, obj, form, change):
        saved = identity_provider_assertions_allow(
            provider=obj.provider, client=obj.client, scopes=list(obj.scopes or []), actor=request.user
        )
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        identity_provider_assertions_deny(provider=obj.provider, client=obj.client, actor=request.user)

    def delete_queryset(self, request, queryset):
        for policy in queryset.select_related("provider", "client"):
            self.delete_model(request, policy)
