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
