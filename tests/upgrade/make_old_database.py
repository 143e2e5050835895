"""Make the database the upgrade test starts from: the previous release's schema, used as people use it.

Run with the OLD code: from a clean checkout of the previous release (with its virtualenv), on an
empty PostgreSQL database (created if missing; one with tables is refused). It writes the dump and
the plaintext credentials beside this file, in fixtures/, for tests/upgrade/test_upgrade_from_previous_release.py:

    git worktree add ../previous <the previous release's commit>   # with its .venv installed
    cd ../previous
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/upg_src \\
        .venv/bin/python /path/to/this/checkout/tests/upgrade/make_old_database.py
    dropdb -h 127.0.0.1 -U postgres upg_src

It uses the server as its users would, through its pages, endpoints and commands (Django's test
client, the production settings, the production password hasher), so that the rows are the ones
that release really writes:

- `seed_demo` (admin, developer, enduser: PBKDF2 password hashes, the approved demo client, an
  ES256 and an RS256 signing key);
- enduser signs in and authorizes the demo client through the consent page (PKCE, `openid`):
  an access and refresh token pair, an ID token, a standing consent, a session; a second code is
  left unredeemed;
- a resource server registered with `--token-format jwt`: a JWT access token for it with its
  refresh token, and another JWT revoked (its status list bit set by the database's trigger);
- RFC 8693: a resource server allowed to exchange toward another (`set-exchange-targets`), and
  an exchanged token;
- RFC 7591: a client that registered itself (its secret and registration access token) and its
  tokens through the unverified consent page;
- an upstream identity provider (its secret sealed), a person linked to it (allauth's
  SocialAccount, a verified EmailAddress), an assertion policy and an ID-JAG access token (the
  provider's signing key kept, its issuer on a fixed loopback port so that the test can serve it);
- second factors: admin's TOTP (secret sealed) and recovery codes; developer's passkey,
  registered through /accounts/2fa/webauthn/add/ (its P-256 private key kept);
- admin history (LogEntry) on the models that may move between apps, and a group and a user
  holding their permissions (content types must follow a moved model);
- the audit rows all of the above wrote.

Every plaintext the test needs (tokens, secrets, passwords, keys) goes into the JSON file: test
fixtures, never a real credential. The environment is fixed (ENVIRONMENT below): sealed secrets
and signing keys depend on OAUTH_SIGNING_KEY_ENCRYPTION_KEY, sessions on DJANGO_SECRET_KEY, JWTs
and passkeys on OAUTH_ISSUER. Rows that expire (access tokens, codes, ID tokens, sessions) are
given a far-future expiry at the end, so that the fixture still works years from now; a JWT's own
`exp` claim is signed and stays as it was (the test checks its signature without it).
"""

import base64
import hashlib
import io
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

# Django and the project are imported inside the functions, never here: only after main() has put the
# old checkout first on sys.path and set the environment (the test imports UpstreamProvider from here).

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
DUMP = FIXTURES / "previous_release.sql"
CREDENTIALS = FIXTURES / "previous_release.json"

# The environment of generation, stored in the JSON for the test to run the new code with.
ENVIRONMENT = {
    "DJANGO_SETTINGS_MODULE": "config.settings",  # production settings: PBKDF2, not the suite's MD5
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "test-suite-only-not-a-production-key",
    "OAUTH_SIGNING_KEY_ENCRYPTION_KEY": "test-suite-only-signing-key-encryption-key",
    "OAUTH_ISSUER": "http://testserver",
    "DJANGO_REQUIRE_HTTPS": "0",
    "DJANGO_ALLOWED_HOSTS": "testserver",
    # The upstream provider's discovery and JWKS are served on loopback (below).
    "OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK": "1",
    "RATELIMIT_ENABLED": "0",
}
RESTRICT_RE = re.compile(r"\\(un)?restrict [A-Za-z0-9]+")
FAR_FUTURE = datetime(2100, 1, 1, tzinfo=UTC)
# The upstream provider's issuer is stored in the database, so it has a fixed address; a port below
# Linux's ephemeral range (32768-60999), where no test's server is picked by the kernel.
UPSTREAM_PORT = 23939
UPSTREAM_ISSUER = f"http://127.0.0.1:{UPSTREAM_PORT}"
UPSTREAM_SUB = "employee-42"
DEMO_REDIRECT = "http://localhost:8765/callback"
AGENT_REDIRECT = "http://127.0.0.1:33418/callback"
JWT_RESOURCE = "https://bookings.example.com/api"
MCP_RESOURCE = "https://mcp.example.com/mcp"
CALENDAR_RESOURCE = "https://calendar.example.com/api"
# The models issue 39 moves between apps (and DOT's swappable ones): their admin history and
# permissions must follow them. Found by class name, wherever they live in the checkout at hand.
TRACKED_MODELS = (
    "SigningKey",
    "StatusList",
    "Consent",
    "ExchangeTarget",
    "AccessToken",
    "RefreshToken",
    "Grant",
    "IDToken",
    "OAuthClient",
    "IdentityProvider",
)


def fail(message: str):
    sys.exit(f"make_old_database: {message}")


def expect(condition: bool, what: str, response=None) -> None:
    if not condition:
        detail = ""
        if response is not None:
            detail = f" ({response.status_code}: {response.content[:400]!r}, Location {response.get('Location')})"
        fail(what + detail)


def checkout_commit() -> str:
    """The old code is the current directory's: a clean checkout, so that the fixture names one commit."""
    if not Path("manage.py").is_file():
        fail("run it from the previous release's checkout (no manage.py here)")
    status = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, check=True).stdout
    if status.strip():
        fail("the checkout has uncommitted changes; the fixture must come from one commit:\n" + status)
    return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def database_prepare(url: str) -> None:
    """Create the database if missing; refuse one that has tables (never drops anything)."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    maintenance = parts._replace(path="/postgres").geturl()
    with psycopg.connect(maintenance, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(url) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0]
    if tables:
        fail(f"database {name} is not empty ({tables} tables): drop it first (dropdb {name})")


# --- the upstream provider: OpenID discovery and a JWKS on loopback, assertions signed here ---------


class UpstreamProvider:
    """The organization's provider: its discovery and JWKS on loopback (the port its issuer names)."""

    def __init__(self, key, port: int = UPSTREAM_PORT):
        self.key = key
        self.issuer = f"http://127.0.0.1:{port}"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                documents = {
                    "/.well-known/openid-configuration": {
                        "issuer": outer.issuer,
                        "jwks_uri": outer.issuer + "/jwks",
                    },
                    "/jwks": {"keys": [outer.key.export_public(as_dict=True)]},
                }
                body = documents.get(self.path)
                payload = json.dumps(body).encode()
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def assertion(self, **claims) -> str:
        from jwcrypto import jwt

        now = int(time.time())
        body = {"iss": self.issuer, "sub": UPSTREAM_SUB, "iat": now, "exp": now + 120, "jti": str(uuid.uuid4())}
        token = jwt.JWT(
            header={"alg": "ES256", "typ": "oauth-id-jag+jwt", "kid": self.key.kid}, claims=json.dumps(body | claims)
        )
        token.make_signed_token(self.key)
        return token.serialize()


# --- the flows, through the server's pages and endpoints --------------------------------------------


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def basic(client_id: str, secret: str) -> str:
    from urllib.parse import quote

    return "Basic " + base64.b64encode(f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()).decode()


def model(name: str):
    from django.apps import apps

    found = [m for m in apps.get_models() if m.__name__ == name and not m._meta.proxy]
    if len(found) != 1:
        fail(f"expected one model named {name}, found {found}")
    return found[0]


def command(*args) -> dict:
    from django.core.management import call_command

    out = io.StringIO()
    call_command(*args, stdout=out)
    text = out.getvalue().strip()
    try:
        return json.loads(text)  # one object, maybe indented
    except json.JSONDecodeError:
        return json.loads(text.splitlines()[-1])


def log_in(username: str, password: str):
    from django.test import Client

    browser = Client()
    response = browser.post("/accounts/login/", {"login": username, "password": password})
    expect(response.status_code == 302, f"{username} signs in", response)
    return browser


def authorize(browser, client_id: str, redirect_uri: str, scope: str, **extra) -> tuple[str, str]:
    """Through the consent page (shown every time: prompt=consent), Allow; the code and its verifier."""
    verifier = secrets.token_urlsafe(48)
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": scope,
        "state": secrets.token_urlsafe(8),
        "code_challenge": b64url(hashlib.sha256(verifier.encode()).digest()),
        "code_challenge_method": "S256",
        "prompt": "consent",
        **extra,
    }
    query = urlencode(params)
    page = browser.get(f"/auth/oauth2/authorize?{query}")
    expect(page.status_code == 200, f"the consent page for {client_id}", page)
    mark = re.search(r'name="consent_shown" value="([^"]+)"', page.content.decode())
    answer = browser.post(f"/auth/oauth2/authorize/allow?{query}", {"consent_shown": mark.group(1)} if mark else {})
    expect(answer.status_code == 302, "Allow redirects", answer)
    query_back = parse_qs(urlsplit(answer["Location"]).query)
    expect("code" in query_back, "Allow gives a code", answer)
    return query_back["code"][0], verifier


def token_request(data: dict, *, auth: tuple[str, str] | None = None) -> dict:
    from django.test import Client

    headers = {"HTTP_AUTHORIZATION": basic(*auth)} if auth else {}
    response = Client().post(
        "/v2/auth/oauth2/token", data=urlencode(data), content_type="application/x-www-form-urlencoded", **headers
    )
    expect(response.status_code == 200, f"token request {data['grant_type']}", response)
    return response.json()


def redeem(client: dict, code: str, verifier: str) -> dict:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": client["redirect_uri"],
        "code_verifier": verifier,
    }
    return token_request(data, auth=(client["client_id"], client["client_secret"]))


def jwt_claims(token: str) -> tuple[dict, dict]:
    header, payload = (
        json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))) for part in token.split(".")[:2]
    )
    return header, payload


def passkey_add(browser) -> dict:
    """What a device answers to /accounts/2fa/webauthn/add/'s challenge (a fresh P-256 key, attestation
    "none"), posted; the key kept to sign an assertion after the upgrade."""
    from allauth.mfa.webauthn.internal.auth import STATE_SESSION_KEY
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from fido2.cose import ES256
    from fido2.utils import websafe_encode
    from fido2.webauthn import Aaguid, AttestationObject, AttestedCredentialData, AuthenticatorData, CollectedClientData

    rp_id = urlsplit(ENVIRONMENT["OAUTH_ISSUER"]).hostname
    page = browser.get("/accounts/2fa/webauthn/add/")
    expect(page.status_code == 200, "the add-a-passkey page", page)
    key = ec.generate_private_key(ec.SECP256R1())
    credential_id = os.urandom(32)
    attested = AttestedCredentialData.create(Aaguid.NONE, credential_id, ES256.from_cryptography_key(key.public_key()))
    flags = AuthenticatorData.FLAG.UP | AuthenticatorData.FLAG.UV | AuthenticatorData.FLAG.AT
    authenticator_data = AuthenticatorData.create(hashlib.sha256(rp_id.encode()).digest(), flags, 0, attested)
    client_data = CollectedClientData.create(
        type="webauthn.create", challenge=browser.session[STATE_SESSION_KEY]["challenge"], origin=f"https://{rp_id}"
    )
    credential = {
        "id": websafe_encode(credential_id),
        "rawId": websafe_encode(credential_id),
        "type": "public-key",
        "response": {
            "clientDataJSON": websafe_encode(client_data),
            "attestationObject": websafe_encode(AttestationObject.create("none", authenticator_data, {})),
        },
        "clientExtensionResults": {},
    }
    added = browser.post("/accounts/2fa/webauthn/add/", {"name": "Laptop", "credential": json.dumps(credential)})
    expect(added.status_code == 302, "the passkey is added", added)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return {"credential_id": websafe_encode(credential_id), "private_key_pem": pem.decode(), "rp_id": rp_id}


def totp_activate(browser) -> str:
    import pyotp

    page = browser.get("/accounts/2fa/totp/activate/")
    expect(page.status_code == 200, "the TOTP activation page", page)
    secret = page.context["form"].secret
    done = browser.post("/accounts/2fa/totp/activate/", {"code": pyotp.TOTP(secret).now()})
    expect(done.status_code == 302, "TOTP is activated", done)
    return secret


# --- the whole use --------------------------------------------------------------------------------


def use_the_server() -> dict:
    from allauth.account.models import EmailAddress
    from allauth.mfa.models import Authenticator
    from allauth.socialaccount.models import SocialAccount
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType
    from django.core.management import call_command
    from django.test import Client
    from jwcrypto import jwk

    from config.management.commands.seed_demo import DEMO_CLIENT, DEMO_USERS

    User = get_user_model()
    out = io.StringIO()
    call_command("seed_demo", "--force", stdout=out)
    printed = out.getvalue()
    passwords = {username: password for username, password, _admin in DEMO_USERS}
    users = {
        name: {"pk": User.objects.get(username=name).pk, "password": passwords[name]}
        for name in ("admin", "developer", "enduser")
    }
    for name in users:
        hashed = User.objects.get(username=name).password
        expect(hashed.startswith("pbkdf2_sha256$"), f"{name}'s password is hashed with PBKDF2 (got {hashed[:14]})")
    demo_id = re.search(r"Demo client_id:\s+(\S+)", printed)
    demo_secret = re.search(r"Demo client_secret:\s+(\S+)", printed)
    expect(bool(demo_id and demo_secret), "seed_demo prints the demo client's id and secret")
    demo = {"client_id": demo_id.group(1), "client_secret": demo_secret.group(1), "redirect_uri": DEMO_REDIRECT}
    expect(DEMO_REDIRECT in DEMO_CLIENT["redirect_uris"], "the demo client's redirect URI")
    clients, tokens = {"demo": demo}, {}

    # enduser authorizes the demo client through the consent page: a standing consent, a pair, an ID token.
    enduser = log_in("enduser", passwords["enduser"])
    scope = "openid PROFILE_READ BOOKING_READ"
    code, verifier = authorize(enduser, demo["client_id"], DEMO_REDIRECT, scope, nonce="n-" + secrets.token_hex(4))
    pair = redeem(demo, code, verifier)
    expect({"access_token", "refresh_token", "id_token"} <= set(pair), "the exchange gives a pair and an ID token")
    tokens["demo"] = {key: pair[key] for key in ("access_token", "refresh_token", "id_token", "scope")}
    # A separate pair whose refresh token the test refreshes (the first pair's access token it only reads).
    code, verifier = authorize(enduser, demo["client_id"], DEMO_REDIRECT, "PROFILE_READ")
    second = redeem(demo, code, verifier)
    tokens["demo_refresh"] = {key: second[key] for key in ("access_token", "refresh_token", "scope")}
    code, verifier = authorize(enduser, demo["client_id"], DEMO_REDIRECT, "PROFILE_READ BOOKING_READ")
    tokens["unredeemed_code"] = {"code": code, "code_verifier": verifier, "redirect_uri": DEMO_REDIRECT}

    # A resource server with JWT access tokens: one live JWT (and its refresh token), one revoked.
    rs = command(
        "oauthclient", "--actor", "admin", "create", "--owner", "admin", "--name", "Bookings API",
        "--resource-server", "--resource-uri", JWT_RESOURCE, "--token-format", "jwt",
    )  # fmt: skip
    clients["jwt_resource_server"] = {
        "client_id": rs["client_id"],
        "client_secret": rs["client_secret"],
        "resource_uri": JWT_RESOURCE,
    }
    for name in ("jwt", "revoked_jwt"):
        code, verifier = authorize(enduser, demo["client_id"], DEMO_REDIRECT, "BOOKING_READ", resource=JWT_RESOURCE)
        answer = redeem(demo, code, verifier)
        header, claims = jwt_claims(answer["access_token"])
        expect(header.get("typ") == "at+jwt", f"the {name} token is a JWT access token ({header})")
        tokens[name] = {
            "access_token": answer["access_token"],
            "refresh_token": answer["refresh_token"],
            "kid": header["kid"],
            "alg": header["alg"],
            "status": claims["status"]["status_list"],
        }
    revoked = Client().post(
        "/v2/auth/oauth2/revoke",
        data=urlencode({"token": tokens["revoked_jwt"]["access_token"]}),
        content_type="application/x-www-form-urlencoded",
        HTTP_AUTHORIZATION=basic(demo["client_id"], demo["client_secret"]),
    )
    expect(revoked.status_code == 200, "the second JWT is revoked", revoked)

    # RFC 8693: the MCP server may exchange a user's token toward the calendar service.
    for name, label, uri in (("mcp", "Scheduling MCP", MCP_RESOURCE), ("calendar", "Calendar API", CALENDAR_RESOURCE)):
        created = command(
            "oauthclient", "--actor", "admin", "create", "--owner", "admin", "--name", label,
            "--resource-server", "--resource-uri", uri,
        )  # fmt: skip
        clients[name] = {
            "client_id": created["client_id"],
            "client_secret": created["client_secret"],
            "resource_uri": uri,
        }
    command(
        "oauthclient", "--actor", "admin", "set-exchange-targets", clients["mcp"]["client_id"], CALENDAR_RESOURCE,
    )  # fmt: skip
    code, verifier = authorize(enduser, demo["client_id"], DEMO_REDIRECT, "BOOKING_READ", resource=MCP_RESOURCE)
    subject = redeem(demo, code, verifier)
    tokens["mcp_subject"] = {"access_token": subject["access_token"], "refresh_token": subject["refresh_token"]}
    # The user's last Allow for the demo client is what its standing consent covers (no page for it).
    standing_consent = {"client": "demo", "scope": "BOOKING_READ"}
    row = model("Consent").objects.get(user_id=users["enduser"]["pk"], client__client_id=demo["client_id"])
    expect(row.scope == standing_consent["scope"], f"the standing consent is the last Allow's ({row.scope})")
    exchanged = token_request(
        {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": subject["access_token"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "resource": CALENDAR_RESOURCE,
        },
        auth=(clients["mcp"]["client_id"], clients["mcp"]["client_secret"]),
    )
    tokens["exchanged"] = {"access_token": exchanged["access_token"], "scope": exchanged["scope"]}

    # RFC 7591: a client registers itself; enduser authorizes it through the unverified consent page.
    registered = Client().post(
        "/v2/auth/oauth2/register",
        data=json.dumps(
            {
                "client_name": "Upgrade Agent",
                "redirect_uris": [AGENT_REDIRECT],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "client_secret_basic",
                "scope": "PROFILE_READ BOOKING_READ",
            }
        ),
        content_type="application/json",
    )
    expect(registered.status_code == 201, "the client registers itself", registered)
    document = registered.json()
    clients["self_registered"] = {
        "client_id": document["client_id"],
        "client_secret": document["client_secret"],
        "registration_access_token": document["registration_access_token"],
        "registration_client_uri": document["registration_client_uri"],
        "redirect_uri": AGENT_REDIRECT,
    }
    code, verifier = authorize(enduser, document["client_id"], AGENT_REDIRECT, "PROFILE_READ")
    answer = redeem(clients["self_registered"], code, verifier)
    tokens["self_registered"] = {key: answer[key] for key in ("access_token", "refresh_token", "scope")}

    # An upstream provider, a person linked to it, and an ID-JAG token it asserted.
    upstream_key = jwk.JWK.generate(kty="EC", crv="P-256", kid="upstream-key-1")
    upstream = UpstreamProvider(upstream_key)
    try:
        upstream_secret = "upstream-" + secrets.token_urlsafe(24)
        with tempfile.NamedTemporaryFile("w", suffix=".secret") as secret_file:
            secret_file.write(upstream_secret)
            secret_file.flush()
            provider = command(
                "identityprovider", "add", "--name", "ACME", "--issuer", UPSTREAM_ISSUER,
                "--client-id", "our-client-at-acme", "--client-secret-file", secret_file.name,
                "--domain", "acme.example",
            )  # fmt: skip
        slug = model("IdentityProvider").objects.get(issuer=UPSTREAM_ISSUER).slug
        employee = User.objects.create_user(username="ada", email="ada@acme.example", password=None)
        EmailAddress.objects.create(user=employee, email="ada@acme.example", verified=True, primary=True)
        SocialAccount.objects.create(
            user=employee,
            provider=slug,
            uid=UPSTREAM_SUB,
            extra_data={"sub": UPSTREAM_SUB, "email": "ada@acme.example", "email_verified": True},
        )
        users["ada"] = {"pk": employee.pk, "email": "ada@acme.example"}
        agent = command(
            "oauthclient", "--actor", "admin", "create", "--owner", "developer", "--name", "Acme Agent",
            "--redirect-uri", "https://agent.acme.example/callback", "--scope", "PROFILE_READ",
            "--scope", "BOOKING_READ", "--purpose", "Books rooms for ACME's people.", "--approve",
        )  # fmt: skip
        clients["agent"] = {"client_id": agent["client_id"], "client_secret": agent["client_secret"]}
        command(
            "identityprovider", "allow-assertions", slug, "--client", agent["client_id"],
            "--scope", "PROFILE_READ", "--scope", "BOOKING_READ",
        )  # fmt: skip
        asserted = token_request(
            {
                "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                "assertion": upstream.assertion(
                    aud=ENVIRONMENT["OAUTH_ISSUER"],
                    client_id=agent["client_id"],
                    resource=MCP_RESOURCE,
                    scope="BOOKING_READ",
                ),
                "resource": MCP_RESOURCE,
            },
            auth=(agent["client_id"], agent["client_secret"]),
        )
        tokens["asserted"] = {"access_token": asserted["access_token"], "scope": asserted["scope"]}
    finally:
        upstream.close()
    upstream_record = {
        "slug": slug,
        "name": provider.get("name", "ACME"),
        "issuer": UPSTREAM_ISSUER,
        "port": UPSTREAM_PORT,
        "client_id": "our-client-at-acme",
        "client_secret": upstream_secret,
        "sub": UPSTREAM_SUB,
        "signing_key": upstream_key.export_private(as_dict=True),
    }

    # Second factors: the administrator's authenticator app and recovery codes; the developer's passkey.
    admin = log_in("admin", passwords["admin"])
    users["admin"]["totp_secret"] = totp_activate(admin)
    codes = Authenticator.objects.get(user_id=users["admin"]["pk"], type=Authenticator.Type.RECOVERY_CODES)
    users["admin"]["recovery_codes"] = codes.wrap().get_unused_codes()
    developer = log_in("developer", passwords["developer"])
    users["developer"]["passkey"] = passkey_add(developer)

    # Admin history and permissions on the models that may move.
    history = []
    for name in TRACKED_MODELS:
        tracked = model(name)
        obj = tracked.objects.order_by("pk").first()
        expect(obj is not None, f"a {name} row to write history about")
        message = f"Checked before the upgrade ({name})"
        entry = LogEntry.objects.create(
            user_id=users["admin"]["pk"],
            content_type=ContentType.objects.get_for_model(tracked),
            object_id=str(obj.pk),
            object_repr=str(obj)[:200],
            action_flag=CHANGE,
            change_message=message,
        )
        history.append({"model": name, "object_id": str(obj.pk), "log_entry": entry.pk, "change_message": message})
    auditors = Group.objects.create(name="Auditors")
    auditor = User.objects.create_user(
        username="auditor", email="auditor@example.com", password=secrets.token_urlsafe(12)
    )
    auditor.groups.add(auditors)
    granted = {"group": {}, "user": {}}
    for name in TRACKED_MODELS:
        tracked = model(name)
        content_type = ContentType.objects.get_for_model(tracked)
        view = Permission.objects.get(content_type=content_type, codename=f"view_{tracked._meta.model_name}")
        change = Permission.objects.get(content_type=content_type, codename=f"change_{tracked._meta.model_name}")
        auditors.permissions.add(view)
        auditor.user_permissions.add(change)
        granted["group"][name], granted["user"][name] = view.codename, change.codename
    users["auditor"] = {"pk": auditor.pk}
    stale = [f"{ct.app_label}.{ct.model}" for ct in ContentType.objects.all() if ct.model_class() is None]
    expect(not stale, f"no stale content type before the upgrade ({stale})")

    # A signed-in browser: its session is checked after the upgrade.
    session_cookie = enduser.cookies[settings_value("SESSION_COOKIE_NAME")]
    users["enduser"]["session"] = {"cookie": session_cookie.key, "value": session_cookie.value}

    audit = {
        name: sorted(model(name).objects.values_list("pk", flat=True))
        for name in ("ClientAuditEvent", "AccountAuditEvent")
    }
    expect(all(audit.values()), f"audit rows were written ({ {k: len(v) for k, v in audit.items()} })")

    # Long-lived rows: the fixture must still work when it is years old.
    model("AccessToken").objects.update(expires=FAR_FUTURE)
    model("Grant").objects.update(expires=FAR_FUTURE)
    model("IDToken").objects.update(expires=FAR_FUTURE)
    from django.contrib.sessions.models import Session

    Session.objects.update(expire_date=FAR_FUTURE)

    return {
        "users": users,
        "clients": clients,
        "tokens": tokens,
        "standing_consent": standing_consent,
        "upstream": upstream_record,
        "admin_history": history,
        "permissions": granted,
        "audit": audit,
    }


def settings_value(name: str):
    from django.conf import settings

    return getattr(settings, name)


def applied_migrations() -> dict[str, list[str]]:
    from django.db.migrations.recorder import MigrationRecorder

    applied: dict[str, list[str]] = {}
    for app, name in MigrationRecorder.Migration.objects.order_by("id").values_list("app", "name"):
        applied.setdefault(app, []).append(name)
    return applied


def dump(url: str) -> bytes:
    """pg_dump as INSERT statements (loaded by psycopg, no psql needed), psql's meta-commands left out."""
    sql = subprocess.run(
        ["pg_dump", "--no-owner", "--no-privileges", "--column-inserts", "--quote-all-identifiers", url],
        capture_output=True,
        check=True,
    ).stdout.decode()
    # pg_dump's \restrict and \unrestrict lines are psql's meta-commands, not SQL.
    lines = [line for line in sql.splitlines() if not RESTRICT_RE.fullmatch(line)]
    return ("\n".join(lines) + "\n").encode()


def main() -> None:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        fail("DATABASE_URL must name an empty PostgreSQL database, e.g. postgres://postgres@127.0.0.1:5432/upg_src")
    commit = checkout_commit()
    # The old code is the current directory's, never this file's checkout.
    sys.path[:] = [os.getcwd(), *(p for p in sys.path if Path(p).resolve() != HERE and p not in ("", "."))]
    os.environ.update(ENVIRONMENT)
    database_prepare(url)

    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    import config

    if Path(config.__file__).resolve().parents[1] != Path.cwd().resolve():
        fail(f"imported the project from {config.__file__}, not from the current directory")
    # The test client's response.context (the TOTP secret on the activation page), and mail kept in memory.
    setup_test_environment()
    call_command("migrate", interactive=False, verbosity=0)
    record = use_the_server()

    FIXTURES.mkdir(exist_ok=True)
    DUMP.write_bytes(dump(url))
    about = {
        "about": (
            "Test fixtures for tests/upgrade/test_upgrade_from_previous_release.py, written by "
            "tests/upgrade/make_old_database.py: every value here is a test credential of a throw-away "
            "database, never a real one."
        ),
        "commit": commit,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "environment": ENVIRONMENT,
        "migrations": applied_migrations(),
    }
    CREDENTIALS.write_text(json.dumps(about | record, indent=2, sort_keys=False) + "\n")
    print(f"wrote {DUMP} ({DUMP.stat().st_size} bytes) and {CREDENTIALS} from commit {commit}")


if __name__ == "__main__":
    main()
