"""SECURITY.md, "Storage and logs": no secret, code, token or verifier appears in any log line.

Every logger — the root, Django's (SQL included), oauthlib's, django-oauth-toolkit's, DRF's and
ours — is turned up to DEBUG while full flows run: registration and a second secret on the
developer page, consent, exchanges (form, JSON, Basic), /v2/me, refreshes, failures with a
wrong secret, verifier or code, replays, and secrets printed by `manage.py oauthclient`. What
the records say and what the configured handlers write is searched for every value handed out
or presented. Positive controls prove that the capture saw those loggers at DEBUG.

oauthlib logs codes and tokens at DEBUG; plumbing/logfilters.py redacts them (LOGGING).
"""

import logging
import secrets
from io import StringIO
from types import ModuleType
from urllib.parse import urlencode

import oauthlib
import pytest
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from oauthclients.models import digest
from plumbing.logfilters import (
    _HEADER_VALUE,
    _KEY_VALUE,
    CREDENTIAL_KEYS,
    REDACTED,
    RedactCredentials,
    RedactInPlaceHandler,
    _cleaned,
    _redact_matches,
    path_redacted,
)
from tests.security.credentials import fail_in_every_way, issue_everything, secrets_from_the_command

NAMED = (
    "django",
    "django.request",
    "django.server",
    "django.security",
    "django.db.backends",
    "django.template",
    "oauthlib",
    "oauth2_provider",
    "rest_framework",
    "oauthclients",
    "oauthflows",
    "scopes",
    "profiles",
)


@pytest.fixture
def log_output(caplog, settings, monkeypatch):
    """Everything logged at DEBUG: caplog's records plus what the configured handlers write."""
    settings.DEBUG = True  # django.db.backends logs SQL only under DEBUG
    written = StringIO()
    for name in sorted({"", *NAMED, *logging.root.manager.loggerDict}):
        logger = logging.getLogger(name)
        caplog.set_level(logging.DEBUG, logger=name)
        if not logger.propagate:
            monkeypatch.setattr(logger, "propagate", True)
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and handler is not caplog.handler:
                monkeypatch.setattr(handler, "stream", written)

    def text() -> str:
        records = "\n".join(f"{record.name} {record.getMessage()}" for record in caplog.records)
        return "\n".join([caplog.text, records, written.getvalue()])

    return text


@pytest.fixture(params=[False, True], ids=["oauthlib-debug-off", "oauthlib-debug-on"])
def oauthlib_debug(request):
    """oauthlib.set_debug(True) makes its request reprs show the URL, body and headers."""
    oauthlib.set_debug(request.param)
    yield request.param
    oauthlib.set_debug(False)


def leaks_by_logger(caplog, ledger) -> list[tuple[str, str, str]]:
    """(what leaked, logger, message) for every record that carries a credential."""
    return [
        (label, record.name, record.getMessage()[:300])
        for record in caplog.records
        for label in ledger.leaks_in(record.getMessage() + (record.exc_text or ""))
    ]


def test_no_log_line_carries_a_secret_code_token_or_verifier(cast, caplog, log_output, oauthlib_debug):
    issued = issue_everything(cast)
    fail_in_every_way(cast, issued)
    secrets_from_the_command(issued.ledger)

    output = log_output()

    assert leaks_by_logger(caplog, issued.ledger) == []
    assert issued.ledger.leaks_in(output) == []
    # Positive controls: SQL (with digests), oauthlib, DOT and request warnings were all captured,
    # and oauthlib did try to log a code (redacted).
    names = {record.name for record in caplog.records}
    assert {"django.db.backends", "django.request", "oauth2_provider"} <= names
    assert any(name.startswith("oauthlib.") for name in names)
    assert digest(issued.ledger.values["second secret"]) in output
    assert "Saving grant {'code': '[redacted]'" in output
    assert "Validating refresh token [redacted] for client" in output


def test_no_json_log_line_carries_a_credential(cast, caplog, log_output, monkeypatch):
    """LOG_FORMAT=json (operations/logs.py): the same flows, the console writing JSON lines."""
    from operations.logs import JsonLines

    (console,) = [handler for handler in logging.getLogger().handlers if handler.name == "console"]
    monkeypatch.setattr(console, "formatter", JsonLines())
    issued = issue_everything(cast)
    fail_in_every_way(cast, issued)
    secrets_from_the_command(issued.ledger)

    output = log_output()

    assert issued.ledger.leaks_in(output) == []
    # Positive controls: the console did write JSON, access lines with their ids included.
    assert '"logger": "operations.access"' in output and '"client_id": ' in output and '"request_id": ' in output
    # Django's `extra={"request": request}` (whose repr shows the query string) is not written.
    assert '"request": "<WSGIRequest' not in output and '"logger": "django.request"' in output
    assert "\"message\": \"Saving grant {'code': '[redacted]'" in output


# --- the filter itself -----------------------------------------------------------------------


def redacted(msg, *args) -> str:
    record = logging.LogRecord("oauthlib.test", logging.DEBUG, __file__, 1, msg, args or None, None)
    assert RedactCredentials().filter(record) is True
    return record.getMessage()


def test_it_redacts_a_placeholder_that_follows_a_credential_word():
    assert redacted("Validating refresh token %s for client %r.", "tok123", "app") == (
        f"Validating refresh token {REDACTED} for client 'app'."
    )
    assert redacted("Invalid refresh token, %s, for client %r.", "tok123", "app") == (
        f"Invalid refresh token, {REDACTED}, for client 'app'."
    )
    assert redacted("Failed basic auth: wrong client secret %s", "cs_abc") == (
        f"Failed basic auth: wrong client secret {REDACTED}"
    )


def test_it_keeps_client_ids_redirect_uris_and_grant_types():
    assert redacted("Validating redirection uri %s for client %s.", "https://a.example/cb", "cid") == (
        "Validating redirection uri https://a.example/cb for client cid."
    )
    assert redacted("Dispatching grant_type %s request to %r.", "refresh_token", "x") == (
        "Dispatching grant_type refresh_token request to 'x'."
    )
    assert redacted("Dispatching token_type %s request", "Bearer") == "Dispatching token_type Bearer request"


def test_it_redacts_credential_keys_in_dict_arguments_without_touching_the_original():
    grant = {"code": "c0de", "state": "xyz"}
    token = {"access_token": "at", "refresh_token": "rt", "expires_in": 1800, "nested": [{"id_token": "i"}]}

    message = redacted("Saving grant %r; issuing %r", grant, token)

    assert "c0de" not in message and "'at'" not in message and "'rt'" not in message and "'i'" not in message
    assert "'state': 'xyz'" in message and "'expires_in': 1800" in message
    assert grant == {"code": "c0de", "state": "xyz"}
    assert token["access_token"] == "at"


def test_it_redacts_key_value_pairs_and_headers_left_inside_a_repr():
    class Request:
        def __repr__(self):
            return (
                '<Request body="grant_type=authorization_code&code=c0de&client_secret=cs_s3cret&code_verifier=v3r"'
                " headers={'HTTP_AUTHORIZATION': 'Basic YTpi', 'HTTP_COOKIE': 'csrftoken=x; sessionid=s3ss'}>"
            )

    message = redacted("Token request validation ok for %r.", Request())

    for value in ("c0de", "cs_s3cret", "v3r", "YTpi", "s3ss"):
        assert value not in message
    assert "grant_type=authorization_code" in message


def test_it_redacts_inside_the_escaped_repr_of_an_exception():
    error = ValueError("<Request headers=\"{'HTTP_AUTHORIZATION': 'Basic YTpi'}\" body=\"code=c0de\">")

    message = redacted("Client error during validation of %r. %r.", "request", error)

    assert "YTpi" not in message and "c0de" not in message


# --- secrets in a URL's path (issue 38, finding 6) -----------------------------------------------------

# What the project's URL patterns capture that is no secret, each with its reason. A route that
# captures anything else carries a secret in its path: every log line redacts it (path_redacted), or
# this file fails until it does.
PUBLIC_PATH_PARTS = {
    "client_id": "a client's public identifier (RFC 6749 §2.2)",
    "secret_id": "the row id of a client secret, never the secret",
    "number": "a token status list's number",
    "pk": "a passkey's row id",
    "id": "a user's row id (the admin's password page)",
    "object_id": "an admin row's id",
    "content_type_id": "an admin content type's id",
    "app_label": "an admin app's name",
    "url": "the admin's catch-all (its own pages' paths)",
    "provider_id": "an identity provider's slug",
    "suffix": "a protected resource's path (RFC 9728)",
    "uidb36": "a user's row id in base 36: the reset key's first part",
}


RESET_ROUTE = "accounts/^password/reset/key/(?P<uidb36>[0-9A-Za-z]+)-(?P<key>.+)/$"


def _url_patterns(patterns=None, prefixes=()):
    """(route, pattern, its resolvers' patterns from the root) for every URL pattern, shadowed ones
    included: a route overridden under the same name (accounts/urls.py over allauth's) is two."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from _url_patterns(pattern.url_patterns, (*prefixes, pattern.pattern))
        else:
            yield "".join(map(str, (*prefixes, pattern.pattern))), pattern, prefixes


def _captured(pattern) -> list[str]:
    return [*pattern.pattern.regex.groupindex, *getattr(pattern.pattern, "converters", {})]


def _path_of(pattern, prefixes, kwargs) -> str:
    """The path this very pattern makes of `kwargs`: reverse() by name would give the first pattern
    of that name, and test an overridden route twice and its override's twin never."""
    urlconf = [pattern]
    for prefix in reversed(prefixes):
        urlconf = [URLResolver(prefix, urlconf)]
    module = ModuleType("one_pattern")  # reverse() takes a URLconf module (hashable, for its cache)
    module.urlpatterns = urlconf
    return reverse(pattern.name, urlconf=module, kwargs=kwargs)


def test_every_secret_a_url_path_carries_is_redacted_in_log_lines():
    carrying = []
    for route, pattern, prefixes in _url_patterns():
        secret_parts = [name for name in _captured(pattern) if name not in PUBLIC_PATH_PARTS]
        if not secret_parts:
            continue
        carrying.append((route, pattern.lookup_str))
        values = {name: secrets.token_hex(16) for name in secret_parts}
        path = _path_of(pattern, prefixes, dict.fromkeys(_captured(pattern), "7") | values)
        for line in (path, f"GET {path} status=200", f"Not Found: {path}", f'{{"path": "{path}"}}'):
            cleaned = _cleaned(line)
            assert not any(value in cleaned for value in values.values()), (route, cleaned)
            assert REDACTED in cleaned
    # Positive control: the two links allauth mails are the routes found (none slipped past the
    # walk), the reset link's twice: ours (accounts/urls.py) and allauth's, which ours shadows.
    assert sorted(carrying) == [
        ("accounts/^confirm-email/(?P<key>[-:\\w]+)/$", "allauth.account.views.ConfirmEmailView"),
        (RESET_ROUTE, "accounts.views.PasswordResetFromKeyView"),
        (RESET_ROUTE, "allauth.account.views.PasswordResetFromKeyView"),
    ]


@pytest.mark.parametrize(
    "kept",
    [
        "/accounts/password/reset/key/done/",
        "/accounts/password/reset/key/7-set-password/",
        "/accounts/confirm-email/",
        "/accounts/email/",
        "GET /settings/developer/clients/abc123/ status=200",
    ],
)
def test_paths_without_a_secret_are_written_as_they_are(kept):
    assert _cleaned(kept) == path_redacted(kept) == kept


def test_a_path_secret_is_cut_where_the_path_ends():
    key = "MQ:1vXyZ:abc-DEF_123"
    assert path_redacted(f"/accounts/confirm-email/{key}/") == f"/accounts/confirm-email/{REDACTED}/"
    assert path_redacted(f"next=/accounts/confirm-email/{key}&x=1") == f"next=/accounts/confirm-email/{REDACTED}&x=1"
    assert path_redacted(f"/accounts/password/reset/key/2f-{key}") == f"/accounts/password/reset/key/2f-{REDACTED}"
    assert path_redacted(f"/accounts/password/reset/key/{key}/") == f"/accounts/password/reset/key/{REDACTED}/"
    assert path_redacted(path_redacted(f"/accounts/confirm-email/{key}/")) == f"/accounts/confirm-email/{REDACTED}/"


def test_a_mapping_argument_is_redacted_by_key():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%(client_secret)s for %(client_id)s", (), None)
    record.args = {"client_secret": "cs_s3cret", "client_id": "cid"}
    RedactCredentials().filter(record)
    assert record.getMessage() == f"{REDACTED} for cid"


def test_the_settings_put_the_redaction_on_both_libraries_and_on_the_console():
    for name in ("oauthlib", "oauth2_provider"):
        assert any(isinstance(handler, RedactInPlaceHandler) for handler in logging.getLogger(name).handlers), name
    console = [handler for handler in logging.getLogger().handlers if handler.name == "console"]
    assert len(console) == 1
    assert any(isinstance(f, RedactCredentials) for f in console[0].filters)


# --- error reports (what AdminEmailHandler mails, and error trackers collect) ---------------


def test_an_error_report_of_a_failing_token_request_carries_no_credential(cast, monkeypatch):
    from django.core.signals import got_request_exception
    from django.views.debug import ExceptionReporter

    from oauthflows.token.oauth2 import Validator

    issued = issue_everything(cast)
    values = issued.ledger.values
    reports = []

    def report(sender, request, **kwargs):
        import sys

        reports.append(ExceptionReporter(request, *sys.exc_info(), is_email=True).get_traceback_text())

    def crash(self, *args, **kwargs):
        raise RuntimeError("simulated failure after client authentication")

    monkeypatch.setattr(Validator, "validate_refresh_token", crash)
    got_request_exception.connect(report)
    try:
        http = Client(raise_request_exception=False)
        data = {
            "grant_type": "refresh_token",
            "refresh_token": values["refreshed refresh token"],
            "client_id": issued.confidential.client_id,
            "client_secret": values["second secret"],
        }
        body = urlencode(data)
        assert (
            http.post("/v2/auth/oauth2/token", body, content_type="application/x-www-form-urlencoded").status_code
            == 500
        )
    finally:
        got_request_exception.disconnect(report)

    assert len(reports) == 1 and "simulated failure" in reports[0]
    assert issued.ledger.leaks_in(reports[0]) == []


# The cheap pre-tests in plumbing.logfilters._cleaned decide whether the two redaction patterns run
# at all; they must never skip a text either pattern would change. Texts made of credential keys,
# header names (in any case, and the non-ASCII letters IGNORECASE folds: 'ı', 'ſ', 'İ'), other words
# and every separator the patterns know.
_PIECES = [
    *CREDENTIAL_KEYS,
    *("CODE", "Token", "toKen", "paſſword", "ıd_token", "İD_TOKEN", "ſecret", "HTTP_AUTHORIZATION"),
    *("AuThOrIzAtIoN", "authorızation", "Cookie", "cookıe", "x", "2", "_", "my", "grant_type", REDACTED, "é"),
    *"=: '\"\\,;&{}()[]\n\t-",
]


def test_credential_keys_are_lower_case():
    # _scrub, the extra fields' check and _cleaned's pre-test all compare a lowered name with them.
    assert all(key == key.lower() for key in CREDENTIAL_KEYS)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=14).map("".join))
def test_the_pre_tests_never_skip_what_the_patterns_would_redact(text):
    both = _KEY_VALUE.sub(_redact_matches, _HEADER_VALUE.sub(_redact_matches, text))
    assert _cleaned(text) == both


@pytest.mark.parametrize(
    "text",
    ["x=code=SECRET", "ıd_token=SECRET", "paſſword: SECRET", "authorızation=Basic SECRET", "Cookie: a=SECRET"],
)
def test_the_pre_tests_let_through_keys_hidden_in_words_and_folded_letters(text):
    assert "SECRET" not in _cleaned(text)
