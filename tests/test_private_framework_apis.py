"""The private parts of Django, django-oauth-toolkit, oauthlib and allauth's app config this house
relies on, each pinned; and no module of ours reaches for a private name of another package of ours.

Each is kept only because the public way costs what the docstring beside its use says; each test
here asserts the signature and the behaviour relied on, so that an upgrade that changes one turns
this file red before anything else misbehaves. pyproject.toml's pins point here.
"""

import ast
import inspect
import subprocess
from pathlib import Path
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


def test_a_kept_insert_is_what_djangos_compiler_writes_for_the_next_row(db):
    """insert_sql keeps a model's INSERT text after Django compiled it once, and fills in the
    values as the compiler would (pre_save, then get_db_prep_save): the same statement and
    parameters as a fresh compile, auto_now fields included."""
    client = make_client(make_user()).client
    handwritten._INSERTS.clear()
    first = ClientAuditEvent(client=client, action=AuditAction.GRANT_DENIED, detail={"n": 1}, created=timezone.now())
    handwritten.insert_sql(connection, first)
    assert (ClientAuditEvent, connection.alias) in handwritten._INSERTS
    second = ClientAuditEvent(
        client=client, action=AuditAction.GRANT_AUTHORIZED, detail={"n": 2}, created=timezone.now()
    )
    kept_sql, kept_params = handwritten.insert_sql(connection, second)
    compiled_sql, _fields, compiled_params = handwritten._compiled_insert(connection, second)
    assert kept_sql == compiled_sql
    assert [repr(p) for p in kept_params] == [repr(p) for p in compiled_params]


def test_a_kept_insert_is_not_used_for_a_row_holding_an_expression(db):
    """A value that is an expression is written by the compiler (its own SQL, not a %s)."""
    from django.db.models.functions import Now

    client = make_client(make_user()).client
    handwritten._INSERTS.clear()
    handwritten.insert_sql(
        connection, ClientAuditEvent(client=client, action=AuditAction.GRANT_DENIED, detail={}, created=timezone.now())
    )
    sql, params = handwritten.insert_sql(
        connection, ClientAuditEvent(client=client, action=AuditAction.GRANT_DENIED, detail={}, created=Now())
    )
    assert sql.count("%s") == len(params) and sql != handwritten._INSERTS[(ClientAuditEvent, connection.alias)][0]


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


def test_csrf_middleware_asks_origin_verified_then_check_referer():
    """plumbing/csrf.py overrides both: `Origin: null` and a missing Referer pass when Fetch
    Metadata says same-origin. Django's process_view must still call them, with these answers
    (a bool; RejectRequest raised to refuse)."""
    from django.middleware.csrf import CsrfViewMiddleware, RejectRequest

    assert parameters(CsrfViewMiddleware._origin_verified) == ["self", "request"]
    assert parameters(CsrfViewMiddleware._check_referer) == ["self", "request"]
    source = inspect.getsource(CsrfViewMiddleware.process_view)
    assert "self._origin_verified(request)" in source and "self._check_referer(request)" in source
    assert "RejectRequest" in inspect.getsource(CsrfViewMiddleware._check_referer)
    assert issubclass(RejectRequest, Exception)


def test_the_database_wrappers_commit_rollback_and_health_check_are_what_plumbing_postgresql_counts():
    """plumbing/postgresql/base.py counts round trips in _commit and _rollback (which commit() and
    rollback() call), and skips the health check's ping by setting health_check_done, which
    close_if_health_check_failed reads, a new connection sets and a new request clears
    (BaseDatabaseWrapper)."""
    from django.db.backends.base.base import BaseDatabaseWrapper

    assert parameters(BaseDatabaseWrapper._commit) == parameters(BaseDatabaseWrapper._rollback) == ["self"]
    assert "self._commit()" in inspect.getsource(BaseDatabaseWrapper.commit)
    assert "self._rollback()" in inspect.getsource(BaseDatabaseWrapper.rollback)
    check = inspect.getsource(BaseDatabaseWrapper.close_if_health_check_failed)
    assert "or self.health_check_done" in check and "self.health_check_done = True" in check
    assert "self.health_check_done = False" in inspect.getsource(BaseDatabaseWrapper.close_if_unusable_or_obsolete)
    assert "self.health_check_done = True" in inspect.getsource(BaseDatabaseWrapper.connect)  # new: healthy


def test_allauths_account_config_ready_is_what_accounts_apps_copies():
    """accounts/apps.py:AllauthAccountConfig.ready replaces allauth's AccountConfig.ready, which
    requires allauth's own middleware by name (ours wraps it): it keeps everything else that
    ready does — the import of allauth's checks — so any new statement of allauth's is missed there.
    This is allauth's whole ready(): a change turns this red, to be copied over."""
    from allauth.account.apps import AccountConfig

    from accounts.apps import AllauthAccountConfig

    body = inspect.getsource(AccountConfig.ready)
    statements = [line.strip() for line in body.splitlines()[1:] if line.strip()]
    assert statements == [
        "from allauth.account import checks  # noqa",
        'required_mw = "allauth.account.middleware.AccountMiddleware"',
        "if required_mw not in settings.MIDDLEWARE:",
        "raise ImproperlyConfigured(",
        'f"{required_mw} must be added to settings.MIDDLEWARE"',
        ")",
    ]
    ours = inspect.getsource(AllauthAccountConfig.ready)
    assert "from allauth.account import checks" in ours and "accounts.middleware.AccountMiddleware" in ours
    assert AllauthAccountConfig.name == AccountConfig.name == "allauth.account"


# --- django-oauth-toolkit ---


def test_load_application_loads_sets_and_returns_the_client(db):
    """oauthflows/token/oauth2.py:Validator._load_application refuses a malformed client_id before
    DOT's, which returns the usable client for a client_id and keeps it in request.client (or None)."""
    from oauth2_provider.oauth2_validators import OAuth2Validator
    from oauthlib.common import Request

    from oauthflows.token.oauth2 import Validator

    assert parameters(OAuth2Validator._load_application) == ["self", "client_id", "request"]
    client = make_client(make_user(), approve=True).client
    request = Request("https://as.example/token")
    request.client = None
    assert Validator()._load_application(client.client_id, request) == client and request.client == client
    fresh = Request("https://as.example/token")
    fresh.client = None
    assert Validator()._load_application("no-such-client", fresh) is None and fresh.client is None
    assert Validator()._load_application("x\x00y", fresh) is None  # ours: refused before the query


def test_oauthlib_core_extracts_params_as_uri_method_body_headers(rf):
    """oauthflows/token/endpoints.py calls OAuthLibCore._extract_params (through
    oauthflows/token/oauth2.py:Backend), which must answer (uri, method, body, headers)."""
    from oauth2_provider.oauth2_backends import OAuthLibCore

    from oauthflows.token.oauth2 import Backend

    assert parameters(OAuthLibCore._extract_params) == ["self", "request"]
    request = rf.post("/v2/auth/oauth2/introspect?x=1", "token=abc", content_type="application/x-www-form-urlencoded")
    uri, method, body, headers = Backend()._extract_params(request)
    assert (uri, method, body) == ("/v2/auth/oauth2/introspect?x=1", "POST", "token=abc")
    assert isinstance(headers, dict)


# --- oauthlib ---


def test_the_token_endpoint_dispatches_through_the_servers_grant_types():
    """oauthflows/token/oauth2.py:Server adds the exchange and the assertion grant to oauthlib's
    `_grant_types`, the dict the token endpoint dispatches on by grant_type."""
    from oauthlib.oauth2.rfc6749.endpoints.token import TokenEndpoint

    from oauthflows.token.oauth2 import Server, Validator

    assert "self._grant_types = grant_types" in inspect.getsource(TokenEndpoint.__init__)
    assert "self.grant_types.get(request.grant_type" in inspect.getsource(TokenEndpoint.create_token_response)
    assert "return self._grant_types" in inspect.getsource(TokenEndpoint.grant_types.fget)
    server = Server(Validator())
    assert server.grant_types is server._grant_types
    assert server.grant_types["authorization_code"] is server.openid_connect_auth
    assert {
        "urn:ietf:params:oauth:grant-type:token-exchange",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
    } <= set(server.grant_types)


def test_oauthlibs_code_grant_validates_through_the_method_the_validated_grant_replaces():
    """oauthflows/token/oauth2.py:ValidatedCodeGrant replaces validate_authorization_request, which
    oauthlib's create_authorization_response calls before it makes, saves and answers the code;
    and oauthlib's OpenID grant adds no code modifier to a plain `code` response."""
    from oauthlib.oauth2.rfc6749.grant_types import AuthorizationCodeGrant

    from oauthflows.token.oauth2 import Server, Validator

    source = inspect.getsource(AuthorizationCodeGrant.create_authorization_response)
    assert "self.validate_authorization_request(request)" in source
    assert "self.create_authorization_code(request)" in source
    assert "self.request_validator.save_authorization_code(" in source
    assert "self.prepare_authorization_response(" in source
    server = Server(Validator())
    assert server.openid_connect_auth.proxy_target._code_modifiers == []
    assert server.validated_code_grant._code_modifiers == []


def test_oauthlibs_request_keeps_a_querys_parameters_in_params():
    """oauthflows/token/oauth2.py:Backend.create_validated_authorization_response fills the
    Request's `_params` with the validated query's pairs rather than writing the query into its URI
    for oauthlib to parse back: the same parameters (the last of a repeated name) and the same
    attribute reads, a name not given reading None."""
    from oauthlib.common import Request, urlencode

    query = [("response_type", "code"), ("client_id", "app"), ("resource", "https://a"), ("resource", "https://b")]
    parsed = Request("/o/authorize/?" + urlencode(query))
    built = Request("/o/authorize/")
    built._params.update(query)
    assert built._params == parsed._params
    assert (built.client_id, built.resource, built.nonce) == ("app", "https://b", None)
    assert (parsed.client_id, parsed.resource, parsed.nonce) == ("app", "https://b", None)


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


# --- ours: a private name stays in its package ---------------------------------------------------

PACKAGES = ("accounts", "config", "oauthclients", "oauthflows", "operations", "plumbing", "profiles", "scopes")
PACKAGES += ("signing", "tokens")


def private_imports(path: str, source: str) -> list[str]:
    """`from <another package of ours> import _name`: a private name used outside its package."""
    own = path.split("/", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            package = node.module.split(".", 1)[0]
            if package in PACKAGES and package != own:
                found += [f"{node.module}.{alias.name}" for alias in node.names if alias.name.startswith("_")]
    return found


def test_no_package_of_ours_imports_a_private_name_of_another():
    """operations used a private name of plumbing.clientip; it is public now (plumbing.clientip.ip_networks)."""
    root = Path(__file__).resolve().parent.parent
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=root, capture_output=True, text=True, check=True)
    found = {
        path: names
        for path in listed.stdout.split()
        if path.split("/", 1)[0] in PACKAGES
        and (names := private_imports(path, (root / path).read_text(encoding="utf-8")))
    }
    assert found == {}
    assert private_imports("operations/networks.py", "from plumbing.clientip import _networks") == [
        "plumbing.clientip._networks"
    ]
    assert private_imports("plumbing/x.py", "from plumbing.clientip import _networks") == []
