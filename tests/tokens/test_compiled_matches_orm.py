"""Every CompiledQuery the hot paths run answers, field for field, what its queryset answers
through the ORM on the same data (plumbing/compiled.py: compiled once per process from the
queryset, so the SQL follows the models; this checks the rows are read back the same way)."""

import pytest

from oauthclients.models import digest
from oauthflows.pages.authorization import _CLIENT_QUERY, _CLIENT_WITH_STANDING_QUERY
from oauthflows.token.oauth2 import _SECRET_QUERY
from profiles.models import Profile
from tests.factories import make_client, make_tokens
from tokens.selectors import _BEARER_QUERY, _INTROSPECTION_QUERY


def related(instance, path: str):
    for part in path.split("__") if path else []:
        instance = getattr(instance, part)
    return instance


def assert_same(compiled_query, *values):
    compiled = compiled_query.first(*values)
    queryset = compiled_query.build(*values)
    paths = [path for path in compiled_query.load if path]
    orm = queryset.model.objects.filter(pk__in=queryset.values("pk")).select_related(*paths).first()
    assert compiled is not None and orm is not None
    if compiled_query.annotations:
        annotated = queryset.values(*compiled_query.annotations).first()
        assert {name: getattr(compiled, name) for name in compiled_query.annotations} == annotated
    for path, wanted in compiled_query.load.items():
        mine, theirs = related(compiled, path), related(orm, path)
        names = wanted or [f.attname for f in type(theirs)._meta.concrete_fields]
        for name in names:
            assert getattr(mine, name) == getattr(theirs, name), (path, name)


@pytest.fixture
def profiled_token(owner, end_user):
    # Values other than the defaults, so that a column read from the wrong position shows.
    Profile.objects.create(user=end_user, name="Eve Example", time_zone="Europe/Paris", locale="fr", time_format=24)
    created = make_client(owner, scopes=["PROFILE_READ"], approve=True)
    access, _refresh = make_tokens(end_user, created.client)
    return created, access


def test_the_bearer_and_introspection_queries_match_the_orm(profiled_token):
    _created, access = profiled_token
    assert_same(_BEARER_QUERY, digest(access))
    assert_same(_INTROSPECTION_QUERY, digest(access))


def test_the_client_secret_query_matches_the_orm(profiled_token):
    created, _access = profiled_token
    assert_same(_SECRET_QUERY, digest(created.secret.plaintext), created.client.client_id)


def test_the_authorization_client_query_matches_the_orm(profiled_token):
    created, _access = profiled_token
    assert_same(_CLIENT_QUERY, created.client.client_id)


def test_the_authorization_client_query_with_the_standing_consent_matches_the_orm(profiled_token, end_user, owner):
    from tokens.consents import consent_record

    created, _access = profiled_token
    assert_same(_CLIENT_WITH_STANDING_QUERY, created.client.client_id, end_user.pk)  # no consent: None
    consent_record(user=end_user, client=created.client, scopes=["PROFILE_READ"])
    assert_same(_CLIENT_WITH_STANDING_QUERY, created.client.client_id, end_user.pk)
    loaded = _CLIENT_WITH_STANDING_QUERY.first(created.client.client_id, end_user.pk)
    assert loaded.standing_scope == "PROFILE_READ" and loaded.standing_unrestricted is False
    assert _CLIENT_WITH_STANDING_QUERY.first(created.client.client_id, owner.pk).standing_scope is None
