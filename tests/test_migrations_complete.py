"""`makemigrations --check` in the suite (so on SQLite and on PostgreSQL): a model change without its
migration fails here, not at the next deploy's `migrate`."""

from io import StringIO

import pytest
from django.core.management import call_command

from oauthclients.models import OAuthClient


def _makemigrations_check() -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exit:
        return exit.code, out.getvalue()
    return 0, out.getvalue()


@pytest.mark.django_db
def test_every_model_change_has_its_migration():
    code, said = _makemigrations_check()
    assert code == 0, said
    assert "No changes detected" in said


@pytest.mark.django_db
def test_a_model_change_without_a_migration_fails_the_check(monkeypatch):
    field = OAuthClient._meta.get_field("name")
    monkeypatch.setattr(field, "max_length", field.max_length + 1)
    code, said = _makemigrations_check()
    assert code == 1 and "Alter field name on oauthclient" in said, said
