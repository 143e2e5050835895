"""The upgrade from the previous release: its database, migrated by this code, keeps every credential working.

The previous release's database is a fixture: tests/upgrade/make_old_database.py, run with that
release's code, migrated an empty PostgreSQL database and used it as people do (seed_demo, consent,
a JWT resource server, token exchange, a self-registered client, an upstream provider and its
assertion, TOTP, a passkey, admin history), then dumped it (fixtures/previous_release.sql) and wrote
every plaintext it handed out beside it (fixtures/previous_release.json).

Here the dump is loaded into a scratch database, `manage.py migrate` of THIS code runs on it, and
a live gunicorn of this code on that database is asked, from the outside, whether everything works
as before: each token introspects active where it did, each refresh token refreshes, the code left
unredeemed redeems, each client secret authenticates, the registration access token reads its
registration, the revoked JWT's status bit is still set, the JWTs verify with the served JWKS (same
kid), the upstream provider's assertion still names the same person and `deny-assertions` ends its
tokens, the authenticator app, a recovery code, the passkey and the PBKDF2 passwords sign in (the
PBKDF2 hash stored as Argon2id afterwards), the session signed in before the upgrade is still signed
in until that sign-in, and the standing consent is still honoured. What cannot be seen from the
outside (content types of the admin history and of permissions, which must follow a model that
moved to another app; sealed secrets; links; audit rows) is read by tests/upgrade/upgraded_facts.py
with this code, right after `migrate`.

The environment is the fixture's (the same keys as at generation): an upgrade keeps its keys.
"""

import base64
import contextlib
import json
import re
import secrets
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from hashlib import sha256
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import jwt
import psycopg
import pyotp
import pytest
import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.db import connection
from django.urls import reverse
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import AuthenticatorData, CollectedClientData
from jwcrypto import jwk

from tests.conftest import REQUIRE_POSTGRES
from tests.integration.flows import CSRF_FIELD_RE, form_post
from tests.integration.server import PROJECT_ROOT, LiveServer, database_url, running_server, server_environment
from tests.upgrade.make_old_database import CREDENTIALS, DUMP, UpstreamProvider

pytestmark = pytest.mark.postgres_only

FIXTURE = json.loads(CREDENTIALS.read_text())
TIMEOUT = 15
TOKEN = "/v2/auth/oauth2/token"
INTROSPECT = "/v2/auth/oauth2/introspect"
ID_JAG_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
JS_DATA_RE = re.compile(r'<script id="js_data" type="application/json">(.*?)</script>', re.S)


@dataclass
class Upgraded:
    server: LiveServer
    environment: dict[str, str]
    migrate_output: str
    facts: dict

    def manage(self, *arguments: str) -> subprocess.CompletedProcess:
        return manage(self.environment, *arguments)


def manage(environment: dict[str, str], *arguments: str) -> subprocess.CompletedProcess:
    """`manage.py` of this code on the upgraded database."""
    return subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _require_postgres(django_db_blocker) -> None:
    # The module's fixture comes before the function-scoped guard (tests/conftest.py): the same rule here.
    with django_db_blocker.unblock():
        vendor = connection.vendor
    if vendor != "postgresql":
        if REQUIRE_POSTGRES:
            pytest.fail(f"REQUIRE_POSTGRES=1 but the test database is {vendor}, not PostgreSQL")
        pytest.skip("the upgrade rehearsal loads a PostgreSQL dump; run with DATABASE_URL=postgres://...")


@contextlib.contextmanager
def scratch_database():
    """A database of its own on the test server, named after the suite's (each run its own), dropped after."""
    configured = settings.DATABASES["default"]
    name = f"upg_{configured['NAME']}"[:63]
    maintenance = database_url({**configured, "NAME": "postgres"})
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # a killed run's leftover
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url({**configured, "NAME": name})
    finally:
        with psycopg.connect(maintenance, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def upgraded(django_db_blocker):
    _require_postgres(django_db_blocker)
    with scratch_database() as url:
        with psycopg.connect(url) as conn:
            conn.execute(DUMP.read_text())  # the previous release's schema and rows, as pg_dump wrote them
        environment = server_environment(url, **FIXTURE["environment"])
        environment["DJANGO_ALLOWED_HOSTS"] = "127.0.0.1,testserver"
        migrated = manage(environment, "migrate", "--noinput")
        output = migrated.stdout + migrated.stderr
        assert migrated.returncode == 0, output
        read = subprocess.run(
            [sys.executable, "-m", "tests.upgrade.upgraded_facts", str(CREDENTIALS)],
            cwd=PROJECT_ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert read.returncode == 0, read.stderr
        facts = json.loads(read.stdout.strip().splitlines()[-1])
        with running_server(None, workers=2, environment=environment) as server:
            yield Upgraded(server=server, environment=environment, migrate_output=output, facts=facts)


# --- helpers: the outside, as apps and browsers see it -------------------------------------------------


def basic(client: dict) -> str:
    raw = f"{quote(client['client_id'], safe='')}:{quote(client['client_secret'], safe='')}".encode()
    return "Basic " + base64.b64encode(raw).decode()


def post_token(server: LiveServer, data: dict, client: dict | None = None) -> requests.Response:
    headers = {"Authorization": basic(client)} if client else {}
    return requests.post(server.url + TOKEN, data=data, headers=headers, timeout=TIMEOUT)


def introspect(server: LiveServer, caller: dict, token: str) -> dict:
    answer = requests.post(
        server.url + INTROSPECT, data={"token": token}, headers={"Authorization": basic(caller)}, timeout=TIMEOUT
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def me(server: LiveServer, token: str) -> requests.Response:
    return requests.get(server.url + "/v2/me", headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def sign_in(server: LiveServer, login: str, password: str) -> tuple[requests.Session, requests.Response]:
    browser = requests.Session()
    page = browser.get(server.url + "/accounts/login/", timeout=TIMEOUT)
    token = CSRF_FIELD_RE.search(page.text).group(1)
    answer = form_post(browser, server.url, "/accounts/login/", token, login=login, password=password)
    return browser, answer


def second_step(server: LiveServer, browser: requests.Session, **data) -> requests.Response:
    page = browser.get(server.url + "/accounts/2fa/authenticate/", timeout=TIMEOUT)
    assert page.status_code == 200, page.status_code
    return form_post(
        browser, server.url, "/accounts/2fa/authenticate/", CSRF_FIELD_RE.search(page.text).group(1), **data
    )


def passkey_assertion(passkey: dict, challenge: str, *, key=None) -> dict:
    """What the device holding the passkey answers to a sign-in's challenge (WebAuthn §7.2), from the
    issuer's origin: the only one a ceremony accepts (accounts.passkeys.passkey_origin_allowed)."""
    key = key or serialization.load_pem_private_key(passkey["private_key_pem"].encode(), password=None)
    rp_id = passkey["rp_id"]
    flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV
    authenticator_data = AuthenticatorData.create(sha256(rp_id.encode()).digest(), flags, 1)
    client_data = CollectedClientData.create(type="webauthn.get", challenge=challenge, origin=ISSUER)
    signature = key.sign(bytes(authenticator_data) + client_data.hash, ec.ECDSA(hashes.SHA256()))
    return {
        "id": passkey["credential_id"],
        "rawId": passkey["credential_id"],
        "type": "public-key",
        "response": {
            "clientDataJSON": websafe_encode(client_data),
            "authenticatorData": websafe_encode(authenticator_data),
            "signature": websafe_encode(signature),
        },
        "clientExtensionResults": {},
    }


def jwks_key(server: LiveServer, kid: str):
    keys = requests.get(server.url + "/.well-known/jwks.json", timeout=TIMEOUT).json()["keys"]
    found = [key for key in keys if key["kid"] == kid]
    assert found, f"kid {kid} is no longer in the JWKS ({[key['kid'] for key in keys]})"
    return jwt.PyJWK(found[0]).key


def status_bits(server: LiveServer, uri: str) -> bytes:
    """The served token status list (RFC draft-ietf-oauth-status-list), its signature checked."""
    answer = requests.get(server.url + path_of(uri), timeout=TIMEOUT)
    assert answer.status_code == 200, answer.text
    header = jwt.get_unverified_header(answer.text)
    assert header["typ"] == "statuslist+jwt"
    claims = jwt.decode(answer.text, jwks_key(server, header["kid"]), algorithms=[header["alg"]])
    assert claims["sub"] == uri
    packed = claims["status_list"]["lst"]
    return zlib.decompress(base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4)))


def bit(bits: bytes, index: int) -> int:
    return (bits[index // 8] >> (index % 8)) & 1


def model(name: str):
    (found,) = [m for m in apps.get_models() if m.__name__ == name and not m._meta.proxy]
    return found


CLIENTS, TOKENS, USERS = FIXTURE["clients"], FIXTURE["tokens"], FIXTURE["users"]
ISSUER = FIXTURE["environment"]["OAUTH_ISSUER"]


# --- the migration ---------------------------------------------------------------------------------


def test_migrate_brings_the_old_database_up_to_date(upgraded):
    assert "InconsistentMigrationHistory" not in upgraded.migrate_output
    # Every migration of this code is now applied: nothing left for a second `migrate`.
    checked = upgraded.manage("migrate", "--check", "--noinput")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_models_and_the_migrations_agree_on_the_upgraded_database(upgraded):
    # makemigrations also checks the database's history against the migration graph.
    checked = upgraded.manage("makemigrations", "--check", "--dry-run")
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --- tokens ------------------------------------------------------------------------------------------


def test_the_consented_tokens_still_work(upgraded):
    server, demo = upgraded.server, CLIENTS["demo"]
    claims = introspect(server, demo, TOKENS["demo"]["access_token"])
    assert claims["active"] is True, claims
    assert claims["sub"] == str(USERS["enduser"]["pk"]) and claims["client_id"] == demo["client_id"]
    assert claims["scope"].split() == TOKENS["demo"]["scope"].split()
    assert me(server, TOKENS["demo"]["access_token"]).status_code == 200
    userinfo = requests.get(
        server.url + "/v2/auth/oauth2/userinfo",
        headers={"Authorization": f"Bearer {TOKENS['demo']['access_token']}"},
        timeout=TIMEOUT,
    )
    assert userinfo.status_code == 200 and userinfo.json()["sub"] == str(USERS["enduser"]["pk"]), userinfo.text
    # The ID token from before still verifies with the published keys (its `exp` passed long ago).
    id_token = TOKENS["demo"]["id_token"]
    header = jwt.get_unverified_header(id_token)
    claims = jwt.decode(
        id_token,
        jwks_key(server, header["kid"]),
        algorithms=[header["alg"]],
        audience=demo["client_id"],
        issuer=ISSUER,
        options={"verify_exp": False},
    )
    assert claims["sub"] == str(USERS["enduser"]["pk"])
    # The failure side: a token nobody issued is not active, and is refused.
    assert introspect(server, demo, "at_" + secrets.token_urlsafe(32)) == {"active": False}
    assert me(server, "at_" + secrets.token_urlsafe(32)).status_code == 401


def test_a_refresh_token_from_before_refreshes(upgraded):
    server, demo, pair = upgraded.server, CLIENTS["demo"], TOKENS["demo_refresh"]
    data = {"grant_type": "refresh_token", "refresh_token": pair["refresh_token"]}
    wrong = post_token(server, data, {**demo, "client_secret": "not-" + demo["client_secret"]})
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    answer = post_token(server, data, demo)
    assert answer.status_code == 200, answer.text
    assert me(server, answer.json()["access_token"]).status_code == 200
    assert introspect(server, demo, pair["access_token"])["active"] is False  # rotated out
    assert post_token(server, {**data, "refresh_token": answer.json()["refresh_token"]}, demo).status_code == 200


def test_the_code_left_unredeemed_redeems_once(upgraded):
    server, demo, code = upgraded.server, CLIENTS["demo"], TOKENS["unredeemed_code"]
    data = {
        "grant_type": "authorization_code",
        "code": code["code"],
        "redirect_uri": code["redirect_uri"],
        "code_verifier": code["code_verifier"],
    }
    answer = post_token(server, data, demo)
    assert answer.status_code == 200, answer.text
    access = answer.json()["access_token"]
    assert me(server, access).status_code == 200
    # RFC 9700 §4.5: a second presentation is refused and ends what the first produced.
    again = post_token(server, data, demo)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert introspect(server, demo, access)["active"] is False


def test_every_client_secret_authenticates(upgraded):
    server = upgraded.server
    with_secrets = {name: client for name, client in CLIENTS.items() if client.get("client_secret")}
    assert set(with_secrets) == {"demo", "jwt_resource_server", "mcp", "calendar", "self_registered", "agent"}
    for name, client in with_secrets.items():
        assert introspect(server, client, "unknown")["active"] is False, name
        wrong = requests.post(
            server.url + INTROSPECT,
            data={"token": "unknown"},
            headers={"Authorization": basic({**client, "client_secret": client["client_secret"][:-2] + "xx"})},
            timeout=TIMEOUT,
        )
        assert wrong.status_code == 401, (name, wrong.text)


def test_the_jwt_access_token_verifies_and_refreshes_with_the_same_key(upgraded):
    server, resource_server, demo = upgraded.server, CLIENTS["jwt_resource_server"], CLIENTS["demo"]
    live, revoked = TOKENS["jwt"], TOKENS["revoked_jwt"]
    # Its signature, with the key the upgraded server publishes (its own `exp` passed long ago: not checked).
    claims = jwt.decode(
        live["access_token"],
        jwks_key(server, live["kid"]),
        algorithms=[live["alg"]],
        audience=resource_server["resource_uri"],
        issuer=ISSUER,
        options={"verify_exp": False},
    )
    assert claims["sub"] == str(USERS["enduser"]["pk"])
    # The status list still says which one was revoked.
    assert live["status"]["uri"] == revoked["status"]["uri"]
    bits = status_bits(server, live["status"]["uri"])
    assert bit(bits, revoked["status"]["idx"]) == 1 and bit(bits, live["status"]["idx"]) == 0
    assert introspect(server, resource_server, live["access_token"])["active"] is True
    assert introspect(server, resource_server, revoked["access_token"])["active"] is False
    # Refreshed: a new JWT, signed by the same key, valid now.
    answer = post_token(server, {"grant_type": "refresh_token", "refresh_token": live["refresh_token"]}, demo)
    assert answer.status_code == 200, answer.text
    fresh = answer.json()["access_token"]
    header = jwt.get_unverified_header(fresh)
    assert header["typ"] == "at+jwt" and header["kid"] == live["kid"]
    jwt.decode(
        fresh,
        jwks_key(server, header["kid"]),
        algorithms=[header["alg"]],
        audience=resource_server["resource_uri"],
        issuer=ISSUER,
    )
    assert introspect(server, resource_server, fresh)["active"] is True
    assert introspect(server, resource_server, live["access_token"])["active"] is False
    # The revoked JWT's refresh token was ended with it.
    ended = post_token(server, {"grant_type": "refresh_token", "refresh_token": revoked["refresh_token"]}, demo)
    assert ended.status_code == 400 and ended.json()["error"] == "invalid_grant"


def test_the_exchanged_token_and_the_exchange_target_hold(upgraded):
    server, mcp, calendar = upgraded.server, CLIENTS["mcp"], CLIENTS["calendar"]
    claims = introspect(server, calendar, TOKENS["exchanged"]["access_token"])
    assert claims["active"] is True, claims
    assert claims["act"] == {"sub": mcp["client_id"]} and claims["aud"] == [calendar["resource_uri"]]
    trade = {
        "grant_type": EXCHANGE_GRANT,
        "subject_token": TOKENS["mcp_subject"]["access_token"],
        "subject_token_type": ACCESS_TOKEN_TYPE,
    }
    answer = post_token(server, {**trade, "resource": calendar["resource_uri"]}, mcp)
    assert answer.status_code == 200, answer.text
    assert introspect(server, calendar, answer.json()["access_token"])["active"] is True
    # Only toward the targets an administrator allowed.
    refused = post_token(server, {**trade, "resource": CLIENTS["jwt_resource_server"]["resource_uri"]}, mcp)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_target", refused.text


def test_the_self_registered_client_keeps_its_registration_and_tokens(upgraded):
    server, agent = upgraded.server, CLIENTS["self_registered"]
    uri = server.url + path_of(agent["registration_client_uri"])
    read = requests.get(uri, headers={"Authorization": f"Bearer {agent['registration_access_token']}"}, timeout=TIMEOUT)
    assert read.status_code == 200, read.text
    assert read.json()["client_id"] == agent["client_id"] and read.json()["client_name"] == "Upgrade Agent"
    refused = requests.get(uri, headers={"Authorization": "Bearer " + secrets.token_urlsafe(32)}, timeout=TIMEOUT)
    assert refused.status_code == 401
    assert introspect(server, agent, TOKENS["self_registered"]["access_token"])["active"] is True
    refresh = {"grant_type": "refresh_token", "refresh_token": TOKENS["self_registered"]["refresh_token"]}
    answer = post_token(server, refresh, agent)
    assert answer.status_code == 200, answer.text


# --- the upstream provider ---------------------------------------------------------------------------


def test_the_upstream_link_and_secret_hold_and_deny_assertions_ends_its_tokens(upgraded):
    server, facts, upstream = upgraded.server, upgraded.facts["upstream"], FIXTURE["upstream"]
    agent, mcp = CLIENTS["agent"], CLIENTS["mcp"]
    ada = USERS["ada"]["pk"]
    assert facts["linked_user"] == ada and facts["verified_email_user"] == ada
    assert facts["policy_scopes"] == [["BOOKING_READ", "PROFILE_READ"]]
    # The sealed secret still opens, where a sign-in through the provider reads it.
    assert upgraded.facts["upstream_app"] == {
        "client_secret": upstream["client_secret"],
        "server_url": upstream["issuer"],
    }
    asserted = TOKENS["asserted"]["access_token"]
    assert introspect(server, mcp, asserted)["active"] is True
    # A new assertion from the same provider names the same person.
    try:
        provider = UpstreamProvider(jwk.JWK(**upstream["signing_key"]), port=upstream["port"])
    except OSError as exc:
        pytest.fail(f"127.0.0.1:{upstream['port']}, where the fixture's upstream issuer lives, is taken: {exc}")
    try:

        def grant() -> requests.Response:
            assertion = provider.assertion(
                aud=ISSUER, client_id=agent["client_id"], resource=mcp["resource_uri"], scope="BOOKING_READ"
            )
            data = {"grant_type": ID_JAG_GRANT, "assertion": assertion, "resource": mcp["resource_uri"]}
            return post_token(server, data, agent)

        answer = grant()
        assert answer.status_code == 200, answer.text
        fresh = answer.json()["access_token"]
        assert introspect(server, mcp, fresh)["sub"] == str(ada)
        denied = upgraded.manage(
            "identityprovider", "deny-assertions", upstream["slug"], "--client", agent["client_id"]
        )
        assert denied.returncode == 0, denied.stderr
        for token in (asserted, fresh):
            assert introspect(server, mcp, token)["active"] is False
        refused = grant()
        assert refused.status_code == 400 and refused.json()["error"] == "unauthorized_client", refused.text
    finally:
        provider.close()


# --- people: passwords, second factors, sessions, consent ----------------------------------------------


def test_a_session_from_before_stays_signed_in_and_the_consent_stands(upgraded):
    server, demo, session = upgraded.server, CLIENTS["demo"], USERS["enduser"]["session"]
    browser = requests.Session()
    browser.cookies.set(session["cookie"], session["value"])
    page = browser.get(server.url + "/settings/apps/", allow_redirects=False, timeout=TIMEOUT)
    assert page.status_code == 200 and "Demo Calendar App" in page.text, page.status_code
    # The standing consent covers what the last Allow granted: a code at once, no consent page.
    verifier = secrets.token_urlsafe(48)
    query = {
        "response_type": "code",
        "client_id": demo["client_id"],
        "redirect_uri": demo["redirect_uri"],
        "scope": FIXTURE["standing_consent"]["scope"],
        "state": "s",
        "code_challenge": base64.urlsafe_b64encode(sha256(verifier.encode()).digest()).rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    answer = browser.get(
        f"{server.url}/auth/oauth2/authorize?{urlencode(query)}", allow_redirects=False, timeout=TIMEOUT
    )
    assert answer.status_code == 302 and answer.headers["Location"].startswith(demo["redirect_uri"]), answer.text[:300]
    code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": demo["redirect_uri"],
        "code_verifier": verifier,
    }
    assert post_token(server, data, demo).status_code == 200
    # A scope never granted still asks.
    wider = browser.get(
        f"{server.url}/auth/oauth2/authorize?{urlencode({**query, 'scope': 'SCHEDULE_READ'})}",
        allow_redirects=False,
        timeout=TIMEOUT,
    )
    assert wider.status_code == 200, wider.status_code


def stored_password(upgraded: Upgraded, username: str) -> str:
    with psycopg.connect(upgraded.environment["DATABASE_URL"]) as conn:
        return conn.execute("SELECT password FROM auth_user WHERE username = %s", [username]).fetchone()[0]


def signed_in_with_the_session_from_before(server: LiveServer) -> bool:
    session = USERS["enduser"]["session"]
    browser = requests.Session()
    browser.cookies.set(session["cookie"], session["value"])
    return browser.get(server.url + "/settings/apps/", allow_redirects=False, timeout=TIMEOUT).status_code == 200


def test_a_pbkdf2_password_from_before_still_signs_in_and_is_stored_as_argon2id(upgraded):
    # After the session test above, which needs the hash from before: the session signed in before
    # the upgrade lasts until this sign-in stores the password again, which signs it out, as a password
    # change would (docs/configuration.md, "Password hashing").
    server = upgraded.server
    assert upgraded.facts["password_hashers"]["enduser"] == "pbkdf2_sha256"  # as stored before the upgrade
    assert stored_password(upgraded, "enduser").startswith("pbkdf2_sha256$")  # migrate did not touch it
    assert signed_in_with_the_session_from_before(server)
    _, wrong = sign_in(server, "enduser", USERS["enduser"]["password"] + "x")
    assert wrong.status_code == 200  # the form again, not signed in
    assert stored_password(upgraded, "enduser").startswith("pbkdf2_sha256$")  # a wrong password upgrades nothing
    browser, answer = sign_in(server, "enduser", USERS["enduser"]["password"])
    assert answer.status_code == 302 and not answer.headers["Location"].startswith("/accounts/2fa/"), answer.headers
    assert browser.get(server.url + "/settings/apps/", allow_redirects=False, timeout=TIMEOUT).status_code == 200
    assert stored_password(upgraded, "enduser").startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")
    assert not signed_in_with_the_session_from_before(server)
    again, answer = sign_in(server, "enduser", USERS["enduser"]["password"])  # the new hash signs in
    assert answer.status_code == 302 and not answer.headers["Location"].startswith("/accounts/2fa/"), answer.headers
    for each in (again, browser):  # and, the hash stored once, the first session stays signed in
        assert each.get(server.url + "/settings/apps/", allow_redirects=False, timeout=TIMEOUT).status_code == 200


def test_the_authenticator_app_and_a_recovery_code_still_sign_in(upgraded):
    server, admin_user = upgraded.server, USERS["admin"]
    assert upgraded.facts["totp_secret"] == admin_user["totp_secret"]  # the sealed secret still opens
    browser, answer = sign_in(server, "admin", admin_user["password"])
    assert answer.headers.get("Location", "").startswith("/accounts/2fa/authenticate/"), answer.headers
    totp = pyotp.TOTP(admin_user["totp_secret"])
    wrong = second_step(server, browser, code=totp.at(time.time() - 3600))
    assert wrong.status_code == 200  # the form again
    if time.time() % totp.interval > totp.interval - 3:
        time.sleep(4)  # not a code that expires on its way to the server (no tolerance: MFA_TOTP_TOLERANCE)
    done = second_step(server, browser, code=totp.now())
    assert done.status_code == 302 and not done.headers["Location"].startswith("/accounts/"), done.headers
    assert browser.get(server.url + "/admin/", allow_redirects=False, timeout=TIMEOUT).status_code == 200
    other, _ = sign_in(server, "admin", admin_user["password"])
    by_code = second_step(server, other, code=admin_user["recovery_codes"][0])
    assert by_code.status_code == 302 and not by_code.headers["Location"].startswith("/accounts/"), by_code.headers


def test_the_passkey_still_signs_in(upgraded):
    server, developer = upgraded.server, USERS["developer"]
    passkey = developer["passkey"]
    assert upgraded.facts["passkeys"] == [websafe_decode(passkey["credential_id"]).hex()]

    def attempt(key=None) -> requests.Response:
        browser, answer = sign_in(server, "developer", developer["password"])
        assert answer.headers.get("Location", "").startswith("/accounts/2fa/authenticate/"), answer.headers
        page = browser.get(server.url + "/accounts/2fa/authenticate/", timeout=TIMEOUT)
        challenge = json.loads(JS_DATA_RE.search(page.text).group(1))["request_options"]["publicKey"]["challenge"]
        credential = json.dumps(passkey_assertion(passkey, challenge, key=key))
        token = CSRF_FIELD_RE.search(page.text).group(1)
        return form_post(browser, server.url, "/accounts/2fa/authenticate/", token, credential=credential)

    # The failure side: the same credential id signed by another key.
    assert attempt(key=ec.generate_private_key(ec.SECP256R1())).status_code == 200
    answer = attempt()
    assert answer.status_code == 302 and not answer.headers["Location"].startswith("/accounts/"), answer.headers


# --- what follows a model to its app: content types, admin history, permissions; audit rows -------------


def test_admin_history_and_permissions_follow_each_model(upgraded):
    facts = upgraded.facts
    assert facts["stale_content_types"] == [], "content types left behind by a model that moved or went"
    for recorded in FIXTURE["admin_history"]:
        seen = facts["admin_history"][recorded["model"]]
        current = model(recorded["model"])
        here = f"{current._meta.app_label}.{current._meta.model_name}"
        assert seen["content_type"] == seen["model"] == here, (recorded["model"], seen)
        assert seen["edited_class"] == recorded["model"] and seen["edited_object"] == recorded["object_id"]
        assert seen["change_message"] == recorded["change_message"]
    for name, held in facts["permissions"].items():
        assert held == {"view (group)": True, "change (user)": True, "delete (never granted)": False}, name


def test_the_admin_shows_the_history_from_before(upgraded):
    server, admin_user = upgraded.server, USERS["admin"]
    browser, _ = sign_in(server, "admin", admin_user["password"])
    # A recovery code of its own: the authenticator app's current code may be the other test's (used once).
    done = second_step(server, browser, code=admin_user["recovery_codes"][1])
    assert done.status_code == 302, done.text[:300]
    shown = 0
    for recorded in FIXTURE["admin_history"]:
        current = model(recorded["model"])
        if not admin.site.is_registered(current):
            continue
        path = reverse(
            f"admin:{current._meta.app_label}_{current._meta.model_name}_history", args=[recorded["object_id"]]
        )
        page = browser.get(server.url + path, allow_redirects=False, timeout=TIMEOUT)
        assert page.status_code == 200 and recorded["change_message"] in page.text, (path, page.status_code)
        shown += 1
    assert shown, "no tracked model in the admin"  # today: OAuthClient, DOT's three, ExchangeTarget, IdentityProvider


def test_every_audit_row_is_still_there(upgraded):
    assert upgraded.facts["audit"] == FIXTURE["audit"]
