"""The admin's model and field names are ours to translate: every model of ours in the admin is named,
singular and plural, in the administrator's language (issue 40's Arabic review of the admin)."""

import pytest
from django.contrib import admin
from django.utils import translation
from django.utils.functional import Promise

OURS = {"accounts", "oauthclients", "tokens", "signing", "operations", "profiles"}
REGISTERED = sorted(
    (model for model in admin.site._registry if model._meta.app_label in OURS), key=lambda m: m._meta.label
)
CLIENT_FIELDS = [
    "user",
    "client_type",
    "purpose",
    "status",
    "rejection_reason",
    "reviewed_by",
    "reviewed_at",
    "token_format",
    "created",
    "updated",
]


def test_the_admin_has_models_of_ours():
    assert len(REGISTERED) >= 8


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.label)
@pytest.mark.parametrize("language", ["de", "ar"])
def test_each_model_of_ours_is_named_in_the_administrators_language(model, language):
    opts = model._meta
    assert isinstance(opts.verbose_name, Promise)
    assert isinstance(opts.verbose_name_plural, Promise)
    english = (str(opts.verbose_name), str(opts.verbose_name_plural))
    with translation.override(language):
        translated = (str(opts.verbose_name), str(opts.verbose_name_plural))
    assert translated[0] != english[0]
    assert translated[1] != english[1]


@pytest.mark.parametrize("name", CLIENT_FIELDS)
def test_the_client_change_pages_labels_are_translated(name):
    from oauthclients.models import OAuthClient

    field = OAuthClient._meta.get_field(name)
    english = str(field.verbose_name)
    with translation.override("ar"):
        assert str(field.verbose_name) != english


def shown_fields(model):
    model_admin = admin.site._registry[model]
    names = [*(model_admin.fields or ()), *model_admin.list_display, *(model_admin.list_filter or ())]
    model_fields = {field.name: field for field in model._meta.get_fields() if hasattr(field, "verbose_name")}
    return sorted({name for name in names if isinstance(name, str) and name in model_fields and name != "id"})


SHOWN = [(model, name) for model in REGISTERED for name in shown_fields(model)]


def test_the_admins_show_fields_of_ours():
    assert len(SHOWN) >= 30


@pytest.mark.parametrize(("model", "name"), SHOWN, ids=lambda v: v if isinstance(v, str) else v._meta.label)
def test_each_field_an_admin_shows_has_a_translatable_label(model, name):
    assert isinstance(model._meta.get_field(name).verbose_name, Promise)
