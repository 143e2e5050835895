"""The Django admin shows times in the administrator's own time zone, and names it."""

from datetime import datetime
from zoneinfo import ZoneInfo

from django.test import Client
from django.utils import timezone

from oauthclients.models import OAuthClient
from profiles.services import profile_update
from tests.factories import PASSWORD, make_client


def admin_page(reviewer, path):
    browser = Client()
    assert browser.login(username=reviewer.username, password=PASSWORD)
    return browser.get(path).content.decode()


def test_the_change_page_shows_times_in_the_administrators_zone(reviewer, owner):
    client = make_client(owner).client
    moment = datetime(2026, 1, 15, 12, 0, tzinfo=ZoneInfo("UTC"))
    OAuthClient.objects.filter(pk=client.pk).update(created=moment)
    profile_update(user=reviewer, time_zone="Asia/Tokyo")
    page = admin_page(reviewer, f"/admin/oauthclients/oauthclient/{client.pk}/change/")
    assert "Times in Asia/Tokyo" in page
    assert "Jan. 15, 2026, 9 p.m." in page  # 12:00 UTC is 21:00 in Tokyo


def test_without_a_profile_it_is_utc(reviewer, owner):
    client = make_client(owner).client
    moment = datetime(2026, 1, 15, 12, 0, tzinfo=ZoneInfo("UTC"))
    OAuthClient.objects.filter(pk=client.pk).update(created=moment)
    page = admin_page(reviewer, f"/admin/oauthclients/oauthclient/{client.pk}/change/")
    assert "Times in UTC" in page and "Jan. 15, 2026, noon" in page


def test_the_zone_does_not_leak_into_the_next_request(reviewer):
    profile_update(user=reviewer, time_zone="Asia/Tokyo")
    admin_page(reviewer, "/admin/")
    assert timezone.get_current_timezone_name() == "UTC"
