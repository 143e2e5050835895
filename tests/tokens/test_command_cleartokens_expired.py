"""`manage.py cleartokens_expired`: a thin wrapper over tokens.cleanup, printing JSON counts."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from oauthclients.models import Grant, RefreshToken
from tests.oauthflows.helpers import exchange, get_code, refresh


def run(*args) -> dict:
    out = StringIO()
    call_command("cleartokens_expired", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_it_prints_every_count_as_json(db):
    assert run() == {
        "refresh_tokens_revoked": 0,
        "refresh_tokens_expired": 0,
        "refresh_tokens_orphaned": 0,
        "access_tokens": 0,
        "authorization_codes": 0,
        "unused_registrations": 0,
        "status_lists": 0,
    }


def test_it_deletes_expired_codes_in_batches(browser, api, confidential):
    client, _secret = confidential
    for _ in range(3):
        get_code(browser, client)
    Grant.objects.update(expires=timezone.now() - timedelta(seconds=1))

    assert run("--batch-size", "2")["authorization_codes"] == 3
    assert not Grant.objects.exists()


def test_revoked_days_sets_how_long_rotated_refresh_tokens_are_kept(browser, api, confidential):
    client, secret = confidential
    first = exchange(api, client, get_code(browser, client), secret=secret).json()
    assert refresh(api, client, first["refresh_token"], secret=secret).status_code == 200
    RefreshToken.objects.filter(revoked__isnull=False).update(revoked=timezone.now() - timedelta(days=3))

    assert run("--revoked-days", "4")["refresh_tokens_revoked"] == 0
    assert run("--revoked-days", "2")["refresh_tokens_revoked"] == 1
    assert RefreshToken.objects.get().revoked is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--batch-size", "0"), "--batch-size must be at least 1."),
        (("--revoked-days", "-1"), "--revoked-days cannot be negative."),
    ],
)
def test_it_refuses_nonsense_options(db, args, message):
    out = StringIO()
    with pytest.raises(CommandError, match=message):
        call_command("cleartokens_expired", *args, stdout=out, stderr=StringIO())
    assert out.getvalue() == ""
