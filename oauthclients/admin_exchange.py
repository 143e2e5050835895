"""The admin's page for token exchange targets (RFC 8693, oauthclients.exchangetargets): each
addition or removal goes through the one audited service, as `oauthclient set-exchange-targets` does,
after a recent sign-in with the second factor (accounts.middleware.RECENT_LOGIN_ADMIN_MODELS)."""

from django import forms
from django.contrib import admin
from django.utils.translation import gettext

from oauthclients.exchangetargets import client_exchange_targets_set, exchange_target_uris
from oauthclients.models import ClientKind, ExchangeTarget, OAuthClient
from oauthclients.policy import client_serves_q


class ExchangeTargetForm(forms.ModelForm):
    class Meta:
        model = ExchangeTarget
        fields = ("client", "target")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        servers = OAuthClient.objects.filter(client_type=ClientKind.RESOURCE_SERVER, deleted_at__isnull=True)
        self.fields["client"].queryset = servers
        self.fields["client"].label = gettext("Resource server (the caller)")
        self.fields["target"].queryset = servers.filter(client_serves_q()).exclude(resource_uri="")
        self.fields["target"].label = gettext("May exchange toward")


@admin.register(ExchangeTarget)
class ExchangeTargetAdmin(admin.ModelAdmin):
    form = ExchangeTargetForm
    list_display = ("client", "target", "created")
    list_select_related = ("client", "target")
    search_fields = ("client__name", "client__client_id", "target__name", "target__resource_uri")
    readonly_fields = ("created",)

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)  # add or remove, never edit

    def save_model(self, request, obj, form, change):
        uris = exchange_target_uris(client=obj.client) + [obj.target.resource_uri]
        client_exchange_targets_set(client=obj.client, resource_uris=uris, actor=request.user)
        obj.pk = ExchangeTarget.objects.get(client=obj.client, target=obj.target).pk

    def delete_model(self, request, obj):
        uris = [uri for uri in exchange_target_uris(client=obj.client) if uri != obj.target.resource_uri]
        client_exchange_targets_set(client=obj.client, resource_uris=uris, actor=request.user)

    def delete_queryset(self, request, queryset):
        for obj in queryset.select_related("client", "target"):
            self.delete_model(request, obj)
