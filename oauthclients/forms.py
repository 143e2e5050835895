"""Forms of the developer pages. They only collect input; the rules live in the services."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from oauthclients.exceptions import ApplicationError
from oauthclients.models import APP_KIND_CHOICES, ClientKind, OAuthClient
from oauthclients.services import MAX_NAME_LENGTH, MAX_PURPOSE_LENGTH
from oauthclients.validators import MAX_LOGO_BYTES, MAX_REDIRECT_URIS, MAX_URI_LENGTH
from scopes.catalog import SCOPE_NAMES, catalog_by_resource

# The services key their errors by model field; a form may call the same thing something else.
_SERVICE_FIELD_NAMES = {"client_type": "kind"}


class _ScopeNamesField(forms.MultipleChoiceField):
    """Checkboxes over the catalog; posted names reach the service unchecked.

    `validators.validate_scope_names` refuses unknown names, so an unknown scope is reported in
    the same pass as every other field's problem instead of hiding them.
    """

    def valid_value(self, value) -> bool:
        return True


class ClientForm(forms.Form):
    """Name, purpose, website, redirect URIs and scopes: what an owner registers and edits.

    Fields are deliberately lenient (not required, no URL parsing): `services.client_create` and
    `services.client_update` run the validators (the purpose is required there) and report every
    field at once, which `add_service_errors` attaches here.
    """

    # Name and purpose: not required here (the services report every field at once, and refuse an
    # empty one), but marked and required in the browser.
    name = forms.CharField(
        label=_("Name"),
        required=False,
        widget=forms.TextInput(attrs={"maxlength": MAX_NAME_LENGTH, "required": True, "dir": "auto"}),
    )
    purpose = forms.CharField(
        label=_("Purpose"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": MAX_PURPOSE_LENGTH, "required": True, "dir": "auto"}),
        help_text=_("What the application does with the access it asks for. Reviewers read this."),
    )
    website_url = forms.CharField(
        label=_("Website"),
        required=False,
        widget=forms.URLInput(attrs={"placeholder": "https://example.com", "required": True, "dir": "ltr"}),
        help_text=_("Shown to users on the consent screen."),
    )
    privacy_policy_url = forms.CharField(
        label=_("Privacy policy URL"),
        required=False,
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/privacy", "dir": "ltr"}),
        help_text=_("Optional. Linked from the consent screen."),
    )
    terms_url = forms.CharField(
        label=_("Terms of service URL"),
        required=False,
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/terms", "dir": "ltr"}),
        help_text=_("Optional. Linked from the consent screen."),
    )
    logo = forms.FileField(
        label=_("Logo"),
        required=False,
        widget=forms.FileInput(attrs={"accept": "image/png,image/jpeg,image/gif,image/webp"}),
        help_text=format_lazy(
            _(
                "Optional. PNG, JPEG, GIF or WebP, at most {kilobytes} KB. Shown on the consent "
                "screen at 64 × 64 pixels; a square image looks best."
            ),
            kilobytes=MAX_LOGO_BYTES // 1024,
        ),
    )
    redirect_uris = forms.CharField(
        label=_("Redirect URIs"),
        required=False,
        # Room for the most a valid list can hold. The validator reports every bad line, so an
        # unbounded textarea would turn a 2 MB post into a 15 MB error page.
        max_length=MAX_REDIRECT_URIS * (MAX_URI_LENGTH + 2),
        widget=forms.Textarea(
            attrs={"rows": 4, "spellcheck": "false", "autocapitalize": "off", "required": True, "dir": "ltr"}
        ),
        help_text=format_lazy(
            _(
                "One per line, 1 to {count}. https only (plain http only for localhost, 127.0.0.1 "
                "and [::1]); no fragment (#). Matched exactly, except that http://127.0.0.1 and http://[::1] "
                "match any port. Native apps may use a reverse-domain scheme: com.example.app:/callback."
            ),
            count=MAX_REDIRECT_URIS,
        ),
    )
    post_logout_redirect_uris = forms.CharField(
        label=_("Post-logout redirect URIs"),
        required=False,
        max_length=MAX_REDIRECT_URIS * (MAX_URI_LENGTH + 2),
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false", "autocapitalize": "off", "dir": "ltr"}),
        help_text=format_lazy(
            _(
                "Optional, one per line, at most {count}, the same rules as redirect URIs: where "
                "OpenID Connect logout (post_logout_redirect_uri) may send users besides your redirect URIs."
            ),
            count=MAX_REDIRECT_URIS,
        ),
    )
    scopes = _ScopeNamesField(required=False, choices=[(name, name) for name in SCOPE_NAMES])

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def service_arguments(self) -> dict:
        """The cleaned values the services take, by name; a posted extra such as is_legacy never passes."""
        fields = (
            "name",
            "purpose",
            "website_url",
            "privacy_policy_url",
            "terms_url",
            "redirect_uris",
            "post_logout_redirect_uris",
            "scopes",
        )
        arguments = {field: self.cleaned_data[field] for field in fields}
        upload = self.cleaned_data.get("logo")
        if upload:
            # One byte over the limit is enough for the service to refuse it; never read more.
            arguments["logo"] = upload.read(MAX_LOGO_BYTES + 1)
        return arguments

    def clean_redirect_uris(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["redirect_uris"].splitlines() if line.strip()]

    def clean_post_logout_redirect_uris(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["post_logout_redirect_uris"].splitlines() if line.strip()]

    def scope_resources(self) -> list[dict]:
        """The scope picker: one group per resource, one row per level, read and write side by side."""
        selected = set(self["scopes"].value() or [])
        return [
            {
                "resource": resource,
                "selected": sum(1 for scope in resource.scopes if scope.name in selected),
                "total": len(resource.scopes),
                "rows": [
                    {
                        "level": access.label,
                        "cells": [
                            {"kind": kind, "scope": scope, "checked": scope.name in selected}
                            if scope
                            else {"kind": kind, "scope": None, "checked": False}
                            for kind, scope in ((_("Read"), access.read), (_("Write"), access.write))
                        ],
                    }
                    for access in resource.levels
                ],
            }
            for resource in catalog_by_resource()
        ]

    def add_service_errors(self, error: ValidationError | ApplicationError) -> None:
        """Attach a service's error to the fields it names (the rest to the whole form)."""
        if isinstance(error, ApplicationError):
            self.add_error(None, error.message)
            return
        if not hasattr(error, "error_dict"):
            self.add_error(None, error)
            return
        for key, messages in error.message_dict.items():
            field = _SERVICE_FIELD_NAMES.get(key, key)
            self.add_error(field if field in self.fields else None, messages)


class ClientCreateForm(ClientForm):
    # No legacy option: legacy clients come only from an administrator or the management command.
    kind = forms.ChoiceField(
        label=_("Kind"), choices=APP_KIND_CHOICES, widget=forms.RadioSelect, initial=ClientKind.CONFIDENTIAL
    )

    field_order = [
        "name",
        "purpose",
        "website_url",
        "privacy_policy_url",
        "terms_url",
        "logo",
        "kind",
        "redirect_uris",
        "post_logout_redirect_uris",
        "scopes",
    ]


class ClientUpdateForm(ClientForm):
    """The kind cannot change after registration; it is shown on the page, not in the form."""

    logo_remove = forms.BooleanField(label=_("Remove the current logo"), required=False)

    def service_arguments(self) -> dict:
        return {**super().service_arguments(), "logo_remove": self.cleaned_data.get("logo_remove", False)}

    @classmethod
    def initial_for(cls, client: OAuthClient) -> dict:
        return {
            "name": client.name,
            "purpose": client.purpose,
            "website_url": client.website_url,
            "privacy_policy_url": client.privacy_policy_url,
            "terms_url": client.terms_url,
            "redirect_uris": "\n".join(client.redirect_uri_list),
            "post_logout_redirect_uris": "\n".join(client.post_logout_redirect_uri_list),
            "scopes": client.scope_list,
        }
