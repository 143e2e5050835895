"""The admin's identity providers: the upstream secret is write-only (typed once, sealed, never
shown), the redirect_uri to register is shown, and every change goes through accounts.services
(audited; a recent sign-in with the second factor first: accounts.middleware.RECENT_LOGIN_VIEWS).

allauth's own SocialApp and SocialToken pages are taken away: our providers come from
IdentityProvider only (accounts.socialadapter.SocialAccountAdapter.list_apps reads nothing else)
and upstream tokens are not stored (SOCIALACCOUNT_STORE_TOKENS = False), so a SocialApp typed
there would keep its client secret in plain text, show it back, and sign nobody in."""

# allauth's admin module registers its classes when imported: import it first, whatever the order
# of INSTALLED_APPS, so that they are there to take away.
import allauth.socialaccount.admin  # noqa: F401
from allauth.socialaccount.models import SocialApp, SocialToken
from django import forms
from django.conf import settings
from django.contrib import admin
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _

from accounts.models import AccountAuditEvent, IdentityProvider
from accounts.services import (
    identity_provider_add,
    identity_provider_change,
    identity_provider_redirect_uri,
    identity_provider_remove,
)

for _model in (SocialApp, SocialToken):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


def _domains(text: str) -> list[str]:
    return [part for part in text.replace(",", " ").split() if part]


class IdentityProviderForm(forms.ModelForm):
    client_secret = forms.CharField(
        label=_("Client secret"),
        # Never sent back to the browser, not even after a failed submission (render_value=False).
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        required=False,
        help_text=_(
            "Shown once, at the provider. Stored sealed; never shown here. Leave empty to keep the current one."
        ),
    )
    domains_text = forms.CharField(
        label=_("Domains"),
        required=False,
        help_text=_("Email domains this provider is authoritative for, separated by spaces (e.g. acme.example)."),
    )

    class Meta:
        model = IdentityProvider
        fields = ("name", "issuer", "client_id", "enforce")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["domains_text"].initial = " ".join(self.instance.domains)
            # One link, one issuer: remove the provider and add it again to change it.
            self.fields["issuer"].disabled = True
        else:
            self.fields["client_secret"].required = True
            self.fields["client_secret"].help_text = _("Stored sealed; never shown again.")

    def clean_name(self):
        name = self.cleaned_data["name"]
        # The slug names the provider in allauth's URLs and in every account link: one per name.
        taken = IdentityProvider.objects.filter(slug=slugify(name)[:40]).exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError(_("Another identity provider has this name."))
        return name


@admin.register(IdentityProvider)
class IdentityProviderAdmin(admin.ModelAdmin):
    form = IdentityProviderForm
    list_display = ("name", "issuer", "client_id", "enforce", "domain_list")
    readonly_fields = ("slug", "redirect_uri")
    fields = ("name", "issuer", "client_id", "client_secret", "domains_text", "enforce", "slug", "redirect_uri")

    @admin.display(description=_("Domains"))
    def domain_list(self, obj) -> str:
        return ", ".join(obj.domains)

    @admin.display(description=_("Redirect URI to register at the provider"))
    def redirect_uri(self, obj) -> str:
        if not obj or not obj.pk:
            return _("Shown once the provider is saved.")
        return identity_provider_redirect_uri(provider=obj, issuer=settings.OAUTH_ISSUER)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        common = {
            "name": data["name"],
            "client_id": data["client_id"],
            "client_secret": data["client_secret"],
            "domains": _domains(data["domains_text"]),
            "enforce": data["enforce"],
            "actor": request.user,
        }
        saved = (
            identity_provider_change(slug=obj.slug, **common)
            if change
            else identity_provider_add(issuer=data["issuer"], **common)
        )
        obj.pk, obj.slug = saved.pk, saved.slug

    def delete_model(self, request, obj):
        identity_provider_remove(slug=obj.slug, actor=request.user)

    def delete_queryset(self, request, queryset):
        for provider in queryset:
            identity_provider_remove(slug=provider.slug, actor=request.user)


@admin.register(AccountAuditEvent)
class AccountAuditEventAdmin(admin.ModelAdmin):
    list_display = ("created", "action", "actor", "user")
    list_filter = ("action",)
    readonly_fields = ("created", "action", "actor", "user", "detail")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
