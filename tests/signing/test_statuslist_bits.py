"""Status bits from the rows (signing.statuslist): a JWT access token's bit is set when its
row goes, its user is made inactive or its client is rejected, whatever the path (the database's
triggers), bulk updates and cascades included; a live token's bit stays clear."""

import secrets
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from oauth2_provider.models import set_token_value

from config.checks import status_triggers_ready
from oauthclients import services
from oauthclients.models import AccessToken, ClientStatus, OAuthClient
from signing.models import StatusList, StatusRevocation
from signing.statuslist import (
    TRIGGER_USER_INACTIVE,
    TRIGGERS,
    status_triggers_install,
    status_triggers_missing,
)
from tests.factories import make_client, make_user
from tests.oauthclients.service_helpers import status_bit

LIST = 7


def jwt_row(user, approved_client, index: int) -> AccessToken:
    """A live JWT access token's row, as save_bearer_token leaves it (its place in list LIST)."""
    StatusList.objects.get_or_create(number=LIST, defaults={"size": 256})
    token = AccessToken(
        user=user,
        application=approved_client,
        scope="PROFILE_READ",
        expires=timezone.now() + timedelta(minutes=30),
        status_list=LIST,
        status_index=index,
    )
    set_token_value(token, secrets.token_urlsafe(32))
    token.save()
    return token


def bits(*indices) -> list[int]:
    return [status_bit(LIST, index) for index in indices]


def test_a_live_token_is_clear_and_an_unrelated_change_sets_nothing(approved_client, end_user):
    jwt_row(end_user, approved_client, 0)
    get_user_model().objects.filter(pk=end_user.pk).update(first_name="Renamed")
    end_user.save()  # still active: no change of is_active
    OAuthClient.objects.filter(pk=approved_client.pk).update(name="Renamed")
    assert bits(0) == [0]
    assert not StatusRevocation.objects.exists()


def test_a_bulk_deactivation_sets_the_bits_of_that_users_tokens_only(approved_client, end_user):
    other = make_user("other")
    jwt_row(end_user, approved_client, 0), jwt_row(end_user, approved_client, 1), jwt_row(other, approved_client, 2)
    # A data migration or a sync job: no save(), no signal.
    assert get_user_model().objects.filter(pk=end_user.pk).update(is_active=False) == 1
    assert bits(0, 1, 2) == [1, 1, 0]
    assert AccessToken.objects.filter(user=end_user).count() == 2  # the rows stay; the bits say it


def test_a_deactivation_by_save_sets_the_bits(approved_client, end_user):
    jwt_row(end_user, approved_client, 3)
    end_user.is_active = False
    end_user.save()
    assert bits(3) == [1]


def test_a_rejected_client_sets_the_bits_by_the_service_or_a_bulk_update(approved_client, owner, end_user, reviewer):
    jwt_row(end_user, approved_client, 0)
    services.client_reject(client=approved_client, actor=reviewer, reason="Abuse")
    assert bits(0) == [1]

    second = make_client(owner, name="Second App", approve=True).client
    third = make_client(owner, name="Third App", approve=True).client
    jwt_row(end_user, second, 1), jwt_row(end_user, third, 2)
    OAuthClient.objects.filter(pk=second.pk).update(status=ClientStatus.REJECTED)
    assert bits(1, 2) == [1, 0]


@pytest.mark.parametrize("how", ["instance", "queryset", "raw", "user_deleted", "client_deleted"])
def test_a_token_whose_row_is_gone_is_set(approved_client, end_user, how):
    token = jwt_row(end_user, approved_client, 5)
    jwt_row(make_user("keeper"), approved_client, 6)
    if how == "instance":
        token.delete()
    elif how == "queryset":
        AccessToken.objects.filter(pk=token.pk).delete()
    elif how == "raw":  # as the refresh rotation's own path does
        AccessToken.objects.filter(pk=token.pk)._raw_delete(AccessToken.objects.db)
    elif how == "user_deleted":  # a cascade: AccessToken's own delete never runs
        end_user.delete()
    else:  # a cascade from the client's row (the admin's delete; the service only marks it deleted)
        approved_client.delete()
    assert bits(5) == [1]
    assert bits(6) == ([1] if how == "client_deleted" else [0])


def test_an_opaque_token_writes_no_bit(approved_client, end_user):
    from tests.factories import make_tokens

    make_tokens(end_user, approved_client)
    AccessToken.objects.all().delete()
    get_user_model().objects.filter(pk=end_user.pk).update(is_active=False)
    assert not StatusRevocation.objects.exists()


def test_the_triggers_are_in_place_and_a_missing_one_is_a_check_error(approved_client, end_user):
    assert status_triggers_missing() == []
    assert status_triggers_ready(databases=["default"]) == []
    with connection.cursor() as cursor:
        cursor.execute(
            f"DROP TRIGGER {TRIGGER_USER_INACTIVE}"
            + (
                f" ON {connection.ops.quote_name(get_user_model()._meta.db_table)}"
                if connection.vendor == "postgresql"
                else ""
            )
        )
    assert status_triggers_missing() == [TRIGGER_USER_INACTIVE]
    (error,) = status_triggers_ready(databases=["default"])
    assert error.id == "config.E006" and TRIGGER_USER_INACTIVE in error.msg and "migrate" in error.hint
    assert status_triggers_ready() == []  # a database question: asked with --database only
    status_triggers_install()
    assert status_triggers_missing() == [] and len(TRIGGERS) == 3
    jwt_row(end_user, approved_client, 9)
    get_user_model().objects.filter(pk=end_user.pk).update(is_active=False)
    assert bits(9) == [1]


def test_migrate_puts_back_a_dropped_trigger(approved_client):
    with connection.cursor() as cursor:
        cursor.execute(
            f"DROP TRIGGER {TRIGGER_USER_INACTIVE}"
            + (
                f" ON {connection.ops.quote_name(get_user_model()._meta.db_table)}"
                if connection.vendor == "postgresql"
                else ""
            )
        )
    call_command("migrate", verbosity=0)
    assert status_triggers_missing() == []
