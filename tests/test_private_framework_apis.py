"""The private parts of Django and django-oauth-toolkit this house relies on, each pinned.

Each is kept only because the public way costs what the docstring beside its use says; each test
here asserts the signature and the behaviour relied on, so that an upgrade that changes one turns
this file red before anything else misbehaves. pyproject.toml's pins point here.
"""

import inspect
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.db.models import QuerySet
from django.db.models.signals import post_delete
from django.db.models.sql import InsertQuery
from django.utils import timezone
from oauth2_provider import cimd as dot_cimd
from oauth2_provider.oauth2_backends import _add_iss_to_redirect

from oauthclients.models import AccessToken, AuditAction, ClientAuditEvent, RefreshToken
from oauthflows.registration import cimd
from plumbing import handwritten
from tests.factories import make_client, make_tokens, make_user


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


# --- Django ---


def test_raw_delete_takes_the_alias_and_deletes_without_collecting_or_signals(db):
    """oauthflows/token/oauth2.py, rotation: the old access token goes in one DELETE (no collector
    SELECTs of related rows, no signals), on the hot refresh path."""
    assert parameters(QuerySet._raw_delete) == ["self", "using"]
    user, client = make_user(), make_client(make_user(), approve=True).client
    make_tokens(user, client)
    token = AccessToken.objects.get()
    RefreshToken.objects.update(access_token=None)  # as rotation does first
    sent = []

    def receiver(**kwargs):
        sent.append(kwargs)

    post_delete.connect(receiver, sender=AccessToken)
    try:
        deleted = AccessToken.objects.filter(pk=token.pk)._raw_delete(AccessToken.objects.db)
    finally:
        post_delete.disconnect(receiver, sender=AccessToken)
    assert deleted == 1 and not AccessToken.objects.exists() and sent == []


def test_insert_query_with_returning_fields_is_djangos_insert(db):
    """plumbing/handwritten.py:insert_sql: Django's own INSERT ... RETURNING pk, written into the
    consent statement's CTE (its parameters positional, in the order the compiler gives)."""
    assert parameters(InsertQuery.insert_values) == ["self", "fields", "objs", "raw"]
    client = make_client(make_user()).client
    event = ClientAuditEvent(client=client, action=AuditAction.GRANT_DENIED, detail={"n": 1}, created=timezone.now())
    sql, params = handwritten.insert_sql(connection, event)
    assert sql.upper().startswith("INSERT INTO") and "RETURNING" in sql.upper()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        (pk,) = cursor.fetchone()
    stored = ClientAuditEvent.objects.get(pk=pk)
    assert (stored.client_id, stored.action, stored.detail) == (client.pk, AuditAction.GRANT_DENIED, {"n": 1})


def test_the_database_caches_cull_and_its_table_maker_are_what_sharedcache_relies_on():
    """plumbing/sharedcache.py overrides DatabaseCache._cull (expired rows only), which Django's
    _base_set calls with (db, cursor, now, num) past MAX_ENTRIES; accounts/migrations/0004 makes the
    table with createcachetable's create_table(database, tablename, dry_run), which reads
    self.verbosity and skips a table that exists."""
    from django.core.cache.backends.db import DatabaseCache
    from django.core.management.commands.createcachetable import Command

    assert parameters(DatabaseCache._cull) == ["self", "db", "cursor", "now", "num"]
    assert "self._cull(db, cursor, now, num)" in inspect.getsource(DatabaseCache._base_set)
    assert parameters(Command.create_table) == ["self", "database", "tablename", "dry_run"]
    source = inspect.getsource(Command.create_table)
    assert "self.verbosity" in source and "in connection.introspection.table_names()" in source


# --- django-oauth-toolkit ---


def test_add_iss_to_redirect_replaces_any_iss_in_the_query():
    """oauthflows/pages/views.py: error redirects carry RFC 9207's `iss` exactly as DOT's success
    redirects do (one rule: DOT's)."""
    assert parameters(_add_iss_to_redirect) == ["uri", "issuer"]
    uri = _add_iss_to_redirect("https://app.example.com/cb?iss=evil&error=access_denied", "https://as.example")
    assert parse_qs(urlsplit(uri).query) == {"error": ["access_denied"], "iss": ["https://as.example"]}


def test_dot_cimd_helpers_keep_their_signatures_and_answers(settings):
    """oauthflows/registration/cimd.py reuses DOT's client_id URL check, its permission check and its
    failure-backoff key (so that DOT's own fetch path and ours share one backoff)."""
    assert parameters(dot_cimd._validate_client_id_url) == ["client_id"]
    assert dot_cimd._validate_client_id_url("https://agent.example/client.json").hostname == "agent.example"
    for bad in ("http://agent.example/c.json", "https://agent.example", "https://u@agent.example/c.json"):
        with pytest.raises(dot_cimd.CIMDError):
            dot_cimd._validate_client_id_url(bad)
    assert parameters(dot_cimd._registration_permitted) == ["request", "client_id"]
    assert isinstance(dot_cimd._registration_permitted(None, "https://agent.example/client.json"), bool)
    assert parameters(dot_cimd._backoff_cache_key) == ["client_id"]
    key = dot_cimd._backoff_cache_key("https://agent.example/client.json")
    assert key == dot_cimd._backoff_cache_key("https://agent.example/client.json") and key.startswith(
        dot_cimd.BACKOFF_CACHE_PREFIX
    )
    assert "_backoff_cache_key(" in inspect.getsource(dot_cimd)  # DOT's own path sets the same key


def test_dot_cimd_fetches_through_its_module_global_urllib3():
    """oauthflows/registration/cimd.py replaces `oauth2_provider.cimd.urllib3` so that DOT's unchanged fetch
    opens its https pools under our deadline: that works only while DOT reaches urllib3 through its
    module global, and reads the document with `_read_document(response)`."""
    fetch = inspect.getsource(dot_cimd.SafeMetadataFetcher.fetch)
    assert "urllib3.HTTPSConnectionPool(" in fetch and "self._read_document(response)" in fetch
    assert dot_cimd.urllib3.HTTPSConnectionPool is cimd._HTTPSConnectionPool
    assert parameters(dot_cimd.SafeMetadataFetcher._read_document) == ["self", "response"]
    assert issubclass(cimd.MetadataFetcher, dot_cimd.SafeMetadataFetcher)
