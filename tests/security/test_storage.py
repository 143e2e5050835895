"""SECURITY.md, "Storage and logs": the database holds no usable credential.

Every kind of credential is handed out through HTTP, then every table is dumped two ways —
`manage.py dumpdata` for all apps, and `SELECT *` over every table the database has — and
searched for each value (and its url-safe random part). Positive controls prove each dump sees
the rows the credentials live in, so an empty or partial dump cannot pass.
"""

from io import StringIO

from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.db import connection

from oauthclients.models import AccessToken, ClientSecret, Grant, OAuthClient, RefreshToken, digest
from tests.security.credentials import issue_everything


def dumpdata_text() -> str:
    out = StringIO()
    call_command("dumpdata", stdout=out)  # every installed app
    return out.getvalue()


def _as_text(value) -> str:
    if isinstance(value, memoryview):
        value = value.tobytes()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def raw_sql_text() -> tuple[str, list[str]]:
    """Every value of every row of every table, stringified; and the tables read."""
    tables = connection.introspection.table_names()
    parts = []
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                parts.extend(_as_text(value) for value in row)
    return "\n".join(parts), tables


def decoded_sessions_text() -> str:
    # Session data is signed and encoded, so a value put there would not show in a raw dump.
    return "\n".join(str(session.get_decoded()) for session in Session.objects.all())


def test_no_dump_of_the_database_contains_a_credential_that_was_handed_out(cast):
    issued = issue_everything(cast)
    values = issued.ledger.values

    dumped = dumpdata_text()
    raw, tables = raw_sql_text()
    sessions = decoded_sessions_text()

    assert issued.ledger.leaks_in(dumped) == []
    assert issued.ledger.leaks_in(raw) == []
    assert issued.ledger.leaks_in(sessions) == []
    # Positive controls: both dumps include the rows that hold the digests.
    # (The first access token was deleted when its refresh token rotated; the rest remain.)
    for label in (
        "secret shown at registration",
        "second secret",
        "code",
        "refresh token",
        "refreshed access token",
        "refreshed refresh token",
        "public client's code",
    ):
        assert digest(values[label]) in dumped, label
        assert digest(values[label]) in raw, label
    assert {
        "oauthclients_accesstoken",
        "oauthclients_refreshtoken",
        "oauthclients_grant",
        "oauthclients_clientsecret",
        "django_session",
    } <= set(tables)
    assert "oauthclients.accesstoken" in dumped and "sessions.session" in dumped
    assert "_auth_user_id" in sessions


def test_codes_tokens_and_secrets_are_stored_as_sha256_digests(cast):
    values = issue_everything(cast).ledger.values

    assert ClientSecret.objects.filter(digest=digest(values["second secret"])).exists()
    assert Grant.objects.filter(code=digest(values["code"])).exists()
    assert AccessToken.objects.filter(token_checksum=digest(values["refreshed access token"])).exists()
    assert RefreshToken.objects.filter(token_checksum=digest(values["refreshed refresh token"])).exists()
    # DOT's plaintext token columns stay empty (COMPLIANT_BCP_RFC9700_TOKEN_STORAGE).
    assert set(AccessToken.objects.values_list("token", flat=True)) == {""}
    assert set(RefreshToken.objects.values_list("token", flat=True)) == {""}
    assert set(OAuthClient.objects.values_list("client_secret", flat=True)) == {""}
