"""Names compared as users read them: UTS #39 confusable skeletons (oauthclients.validators.name_skeleton),
stored on each client (`name_skeleton`, indexed), filled for existing rows by migration 0013."""

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from oauthclients import selectors, services
from oauthclients.models import OAuthClient
from oauthclients.validators import (
    NAME_SKELETON_LENGTH,
    invisible_characters,
    mixed_script,
    name_skeleton,
)
from tests.factories import make_client

GOOGLE = "googlecalendar"


@pytest.mark.parametrize(
    "name",
    [
        "Google Calendar",
        "google  calendar",
        "G\u043e\u043egle Calendar",  # Cyrillic о
        "G\u03bf\u03bfgle Calendar",  # Greek ο
        "Google\u3164Calendar",  # Hangul filler
        "Google\u200bCalendar",  # zero-width space
        "G00gle Calendar",  # digits for letters
        "Goog1e Calendar",  # 1 for l
        "Ｇｏｏｇｌｅ Ｃａｌｅｎｄａｒ",  # fullwidth
        "Gôogle-Calendar",  # an accent, a hyphen
    ],
)
def test_names_users_read_alike_share_a_skeleton(name):
    assert name_skeleton(name) == GOOGLE


@pytest.mark.parametrize("name", ["Google Calender", "Gogle Calendar", "Google Calendar Sync", "Calendar Google"])
def test_names_users_read_differently_do_not(name):
    assert name_skeleton(name) != GOOGLE


def test_the_skeleton_is_bounded_for_its_column():
    # U+FDFA becomes eighteen letters under NFKC: a 100-character name could not fit otherwise.
    assert len(name_skeleton("\ufdfa" * 100)) == NAME_SKELETON_LENGTH


def test_invisible_and_filler_characters_are_named_once_each_in_order():
    assert invisible_characters("A\u3164B\u200bC\u3164") == ["U+3164", "U+200B"]
    assert invisible_characters("Calendar Sync — 予定 ✓") == []


def test_mixed_script_follows_uts39_resolved_script_sets():
    assert mixed_script("G\u043e\u043egle")  # Latin + Cyrillic
    assert not mixed_script("予定カレンダー")  # Han + Katakana: Japanese
    assert not mixed_script("달력2")  # Hangul with a digit
    assert not mixed_script("Google")


@pytest.mark.django_db
def test_saving_a_client_stores_its_skeleton_even_with_update_fields(owner):
    client = make_client(owner, name="Calendar Sync").client
    assert OAuthClient.objects.get(pk=client.pk).name_skeleton == "calendarsync"
    client.name = "G00gle Calendar"
    client.save(update_fields=["name"])
    assert OAuthClient.objects.get(pk=client.pk).name_skeleton == GOOGLE


@pytest.mark.django_db
def test_the_lookup_is_one_indexed_query(owner, django_assert_num_queries):
    make_client(owner, name="Google Calendar", approve=True)
    impostor = services.client_self_register(
        name="G\u043e\u043egle Calendar",
        kind="public",
        redirect_uris=["http://127.0.0.1:9000/cb"],
        scopes=["PROFILE_READ"],
        source="dcr",
    ).client
    with django_assert_num_queries(1):
        assert selectors.verified_name_like(impostor) == "Google Calendar"


@pytest.mark.django_db
def test_a_pending_rejected_or_resource_server_namesake_is_not_a_verified_app(owner):
    make_client(owner, name="Google Calendar")  # pending
    services.resource_server_create(owner=owner, name="Google Calendar")
    impostor = services.client_self_register(
        name="Google Calendar",
        kind="public",
        redirect_uris=["http://127.0.0.1:9000/cb"],
        scopes=["PROFILE_READ"],
        source="dcr",
    ).client
    assert selectors.verified_name_like(impostor) is None


@pytest.mark.django_db
def test_the_refresh_command_stores_stale_skeletons_again(owner):
    client = make_client(owner, name="Google Calendar").client
    OAuthClient.objects.filter(pk=client.pk).update(name_skeleton="stale")
    out = io.StringIO()
    call_command("oauthclient", "name-skeletons", stdout=out)
    assert json.loads(out.getvalue()) == {"updated": 1}
    assert OAuthClient.objects.get(pk=client.pk).name_skeleton == GOOGLE


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_skeleton_of_existing_clients(owner):
    before, after = (
        [("oauthclients", "0015_post_logout_redirect_uris")],
        [("oauthclients", "0016_client_name_skeleton")],
    )
    # The migrate command, not the bare executor: its pre/post_migrate signals take the status
    # list triggers off and put them back (SQLite cannot rebuild a table another's trigger names).
    call_command("migrate", *before[0], verbosity=0)
    try:
        old = MigrationExecutor(connection).loader.project_state(before).apps.get_model("oauthclients", "OAuthClient")
        row = old.objects.create(
            user_id=owner.pk,
            name="G\u03bf\u03bfgle\u3164Calendar",
            client_type="confidential",
            website_url="https://x.example",
            redirect_uris="https://x.example/cb",
            scopes="PROFILE_READ",
        )
        call_command("migrate", *after[0], verbosity=0)
    finally:
        # Back to the latest state, whatever happened, for the tests after this one.
        call_command("migrate", "oauthclients", verbosity=0)
    assert OAuthClient.objects.get(pk=row.pk).name_skeleton == GOOGLE
