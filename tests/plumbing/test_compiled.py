"""plumbing.compiled: a queryset compiled once, run with new values, rows as model instances."""

from datetime import timedelta
from unittest import mock

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from oauthclients.models import AccessToken, ClientSecret, digest
from plumbing.compiled import CompiledQuery
from profiles.models import Profile
from tests.factories import make_client, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_and_bob_tokens(owner):
    client = make_client(owner, approve=True).client
    alice, bob = make_user("alice"), make_user("bob")
    Profile.objects.create(user=alice, name="Alice A.", time_zone="Europe/Berlin")
    made = {}
    for user in (alice, bob):
        made[user.username] = AccessToken.objects.create(
            user=user,
            application=client,
            token="",
            token_checksum=digest(f"value-{user.username}"),
            scope="PROFILE_READ",
            expires=timezone.now() + timedelta(hours=1),
        )
    return made


def _query():
    return CompiledQuery(
        lambda checksum: AccessToken.objects.filter(token_checksum=checksum)[:1],
        load={
            "": ("scope", "expires", "user_id", "application_id"),
            "user": ("username",),
            "user__profile": ("name", "time_zone", "user_id"),
            "application": ("client_id",),
        },
    )


def test_rows_become_instances_with_their_relations_and_only_the_loaded_columns(alice_and_bob_tokens):
    query = _query()
    token = query.first(digest("value-alice"))
    assert token.pk == alice_and_bob_tokens["alice"].pk
    assert token.scope == "PROFILE_READ"
    assert token.expires == alice_and_bob_tokens["alice"].expires
    with CaptureQueriesContext(connection) as queries:
        assert token.user.username == "alice"
        assert token.user.profile.time_zone == "Europe/Berlin"
        assert token.user.profile.user is token.user  # the reverse side is cached too
        assert token.application.client_id == alice_and_bob_tokens["alice"].application.client_id
    assert len(queries) == 0
    # A column not loaded is deferred, exactly as .only() leaves it.
    assert "token_checksum" in token.get_deferred_fields()


def test_a_missing_reverse_one_to_one_reads_as_does_not_exist_without_a_query(alice_and_bob_tokens):
    token = _query().first(digest("value-bob"))
    with CaptureQueriesContext(connection) as queries, pytest.raises(Profile.DoesNotExist):
        token.user.profile  # noqa: B018
    assert len(queries) == 0


def test_no_row_is_none_and_each_call_is_one_counted_query(alice_and_bob_tokens):
    query = _query()
    with CaptureQueriesContext(connection) as queries:
        assert query.first(digest("unknown")) is None
        assert query.first(digest("value-bob")).user.username == "bob"
    assert len(queries) == 2


def test_the_sql_is_compiled_once_per_process(alice_and_bob_tokens):
    query = _query()
    with mock.patch.object(SQLCompiler, "as_sql", autospec=True, side_effect=SQLCompiler.as_sql) as as_sql:
        for name in ("alice", "bob", "alice"):
            assert query.first(digest(f"value-{name}")).user.username == name
    assert as_sql.call_count == 1


def test_whole_models_load_every_column(owner):
    created = make_client(owner, approve=True)
    query = CompiledQuery(
        lambda value, client_id: ClientSecret.objects.filter(digest=value, client__client_id=client_id)[:1],
        load={"": None, "client": None},
    )
    secret = query.first(digest(created.secret.plaintext), created.client.client_id)
    assert secret.get_deferred_fields() == set()
    assert secret.client.get_deferred_fields() == set()
    assert secret.client.name == created.client.name
    assert query.first(digest(created.secret.plaintext), "someone-else") is None


def test_a_lookup_that_transforms_its_value_is_refused_at_compile_time(alice_and_bob_tokens):
    query = CompiledQuery(lambda name: AccessToken.objects.filter(user__username__icontains=name), load={"": None})
    with pytest.raises(ImproperlyConfigured, match="untransformed"):
        query.first("ali")


def test_an_unknown_column_is_refused(alice_and_bob_tokens):
    query = CompiledQuery(lambda checksum: AccessToken.objects.filter(token_checksum=checksum), load={"": ("nope",)})
    with pytest.raises(Exception, match="nope"):
        query.first("x")


def test_int_slots_and_annotations_ride_in_the_one_statement(alice_and_bob_tokens):
    """A parameter annotated `int` is a slot too, and annotated values come back on the root instance."""
    from django.db.models import Count, Q

    def build(checksum: str, user_id: int):
        return (
            AccessToken.objects.filter(token_checksum=checksum)
            .annotate(same_user=Count("user", filter=Q(user_id=user_id)))
            .order_by()[:1]
        )

    query = CompiledQuery(build, load={"": ("scope",)}, annotations=("same_user",))
    alice, bob = alice_and_bob_tokens["alice"], alice_and_bob_tokens["bob"]
    with CaptureQueriesContext(connection) as queries:
        mine = query.first(digest("value-alice"), alice.user_id)
        theirs = query.first(digest("value-alice"), bob.user_id)
    assert len(queries) == 2
    assert (mine.pk, mine.same_user) == (alice.pk, 1)
    assert (theirs.pk, theirs.same_user) == (alice.pk, 0)
    assert query.first(digest("value-nobody"), alice.user_id) is None


def test_an_int_slot_that_is_not_one_parameter_is_refused(alice_and_bob_tokens):
    def build(user_id: int):
        return AccessToken.objects.filter(user_id__gt=1)  # the slot is not used

    query = CompiledQuery(build, load={"": None})
    with pytest.raises(ImproperlyConfigured, match="untransformed"):
        query.first(1)
