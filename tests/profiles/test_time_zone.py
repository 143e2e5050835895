"""Times on our pages are in the user's time zone (from their profile), with the zone named."""

from datetime import UTC, datetime

import pytest
from django.test import Client

from oauthclients.models import ClientSecret
from profiles.context_processors import time_zone_for_user
from profiles.models import Profile
from tests.factories import make_client
from tests.oauthflows.helpers import exchange, get_code

pytestmark = pytest.mark.django_db


def test_the_profile_zone_is_used_and_named(owner):
    Profile.objects.create(user=owner, time_zone="America/New_York")
    created = make_client(owner)
    ClientSecret.objects.filter(pk=created.secret.secret.pk).update(created=datetime(2026, 1, 15, 18, 30, tzinfo=UTC))
    browser = Client()
    browser.force_login(owner)

    content = browser.get(f"/settings/developer/clients/{created.client.client_id}/").content.decode()

    assert '15 Jan 2026, 13:30 <span class="tz">America/New_York</span>' in content
    assert 'datetime="2026-01-15T18:30:00+00:00"' in content


def test_without_a_profile_times_are_in_utc_and_say_so(owner):
    created = make_client(owner)
    ClientSecret.objects.filter(pk=created.secret.secret.pk).update(created=datetime(2026, 1, 15, 18, 30, tzinfo=UTC))
    browser = Client()
    browser.force_login(owner)

    content = browser.get(f"/settings/developer/clients/{created.client.client_id}/").content.decode()

    assert '15 Jan 2026, 18:30 <span class="tz">UTC</span>' in content


@pytest.mark.parametrize("stored", ["Mars/Olympus_Mons", "", "../../etc/passwd"])
def test_an_unknown_zone_falls_back_to_utc(owner, stored):
    Profile.objects.create(user=owner, time_zone=stored)
    assert time_zone_for_user(owner) == "UTC"


def test_connected_apps_show_times_in_the_users_zone(end_user, browser, api, confidential):
    client, secret = confidential
    Profile.objects.create(user=end_user, time_zone="Asia/Tokyo")
    assert exchange(api, client, get_code(browser, client), secret=secret).status_code == 200

    content = browser.get("/settings/apps/").content.decode()

    assert '<span class="tz">Asia/Tokyo</span>' in content
    assert " UTC</dd>" not in content
