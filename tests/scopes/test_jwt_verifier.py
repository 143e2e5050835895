"""scopes.jwt.JwtVerifier against a stand-in authorization server on loopback: the JWKS and a token
status list served over HTTP, access tokens signed here as RFC 9068 and the status list draft say
(the real server's tokens are verified end to end in tests/integration/test_jwt_resource_server.py)."""

import base64
import json
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from jwcrypto import jwk, jws

from scopes.jwt import JwtVerifier
from scopes.verifiers import AuthorizationServerUnavailable, audience_accepted

RESOURCE = "https://bookings.example.com/v2"


class StandIn:
    """Serves `routes` {path: (status, content type, body)} and counts the requests per path."""

    def __init__(self):
        self.routes: dict[str, tuple[int, str, bytes]] = {}
        self.hits: dict[str, int] = {}
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                stand_in.hits[self.path] = stand_in.hits.get(self.path, 0) + 1
                status, content_type, body = stand_in.routes.get(self.path, (404, "application/json", b"{}"))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class Issuer:
    """Keys, a JWKS and status lists, as the authorization server publishes them."""

    def __init__(self, stand_in: StandIn):
        self.stand_in = stand_in
        self.keys: dict[str, tuple[str, jwk.JWK]] = {}
        self.published: list[str] = []
        self.bits = bytearray(16)
        self.ttl = 10
        self.list_path = "/v2/auth/oauth2/status-lists/1"
        self.current = self.add_key("ES256")
        self.publish_list()

    @property
    def url(self) -> str:
        return self.stand_in.url

    def add_key(self, algorithm: str, *, publish=True) -> str:
        if algorithm == "ES256":
            key = jwk.JWK.generate(kty="EC", crv="P-256")
        else:
            key = jwk.JWK.generate(kty="RSA", size=2048)
        kid = uuid.uuid4().hex[:16]
        self.keys[kid] = (algorithm, key)
        if publish:
            self.published.append(kid)
            self.publish_jwks()
        return kid

    def publish_jwks(self, extra: list[dict] = ()):
        entries = []
        for kid in self.published:
            algorithm, key = self.keys[kid]
            entries.append({**json.loads(key.export_public()), "kid": kid, "alg": algorithm, "use": "sig"})
        body = json.dumps({"keys": [*entries, *extra]}).encode()
        self.stand_in.routes["/.well-known/jwks.json"] = (200, "application/json", body)

    def sign(self, header: dict, claims: dict, kid: str | None = None) -> str:
        kid = kid or self.current
        algorithm, key = self.keys[kid]
        token = jws.JWS(json.dumps(claims).encode())
        token.add_signature(key, alg=algorithm, protected=json.dumps({"alg": algorithm, "kid": kid, **header}))
        return token.serialize(compact=True)

    def claims(self, **changes) -> dict:
        now = int(time.time())
        claims = {
            "iss": self.url,
            "sub": "42",
            "aud": RESOURCE,
            "client_id": "app-1",
            "scope": "BOOKING_READ SCHEDULE_READ",
            "jti": uuid.uuid4().hex,
            "iat": now,
            "exp": now + 1800,
            "auth_time": now - 60,
            "status": {"status_list": {"idx": 3, "uri": self.url + self.list_path}},
        }
        claims.update(changes)
        return {name: value for name, value in claims.items() if value is not None}

    def token(self, kid: str | None = None, typ: str = "at+jwt", **changes) -> str:
        return self.sign({"typ": typ}, self.claims(**changes), kid)

    def publish_list(self, *, path=None, kid=None, typ="statuslist+jwt", **changes):
        path = path or self.list_path
        now = int(time.time())
        claims = {
            "sub": self.url + path,
            "iat": now,
            "exp": now + 3600,
            "ttl": self.ttl,
            "status_list": {"bits": 1, "lst": _b64(zlib.compress(bytes(self.bits)))},
        } | changes
        body = self.sign({"typ": typ}, claims, kid).encode()
        self.stand_in.routes[path] = (200, "application/statuslist+jwt", body)

    def revoke(self, index: int):
        self.bits[index // 8] |= 1 << (index % 8)
        self.publish_list()


@pytest.fixture
def stand_in():
    served = StandIn()
    yield served
    served.stop()


@pytest.fixture
def stand_in_issuer(stand_in, settings):
    made = Issuer(stand_in)
    settings.OAUTH_ISSUER = made.url
    settings.OAUTH_RESOURCE_URI = RESOURCE
    settings.OAUTH_INTROSPECTION_URL = None
    settings.OAUTH_RESOURCE_SERVER_ID = None
    return made


@pytest.fixture
def verifier(stand_in_issuer):
    return JwtVerifier()


def test_a_signed_token_for_this_service_is_accepted(stand_in_issuer, verifier):
    verification = verifier.verify(stand_in_issuer.token())
    assert verification is not None
    assert verification.token.scopes == ("BOOKING_READ", "SCHEDULE_READ")
    assert verification.token.subject == "42" and verification.user.pk == "42"
    assert verification.token.client_id == "app-1" and verification.token.audience == (RESOURCE,)
    assert verification.token.unrestricted is False


@pytest.mark.parametrize(
    "aud",
    [
        RESOURCE + "/",
        [RESOURCE + "/"],
        RESOURCE + "/more",
        RESOURCE.upper(),
        [7, RESOURCE + "x"],
        "https://bookings.example.com",
    ],
)
def test_the_audience_is_compared_as_the_other_verifiers_compare_it(stand_in_issuer, verifier, settings, aud):
    # One comparison (scopes.verifiers.audience_includes) for this verifier and audience_accepted,
    # which the introspection and local verifiers' callers use: they can no longer disagree.
    settings.OAUTH_RESOURCE_URI = RESOURCE
    audience = (aud,) if isinstance(aud, str) else tuple(aud)
    accepted = verifier.verify(stand_in_issuer.token(aud=aud)) is not None
    assert accepted == audience_accepted(audience) == (aud in (RESOURCE + "/", [RESOURCE + "/"]))


def test_an_rs256_token_and_an_audience_list_are_accepted(stand_in_issuer, verifier):
    kid = stand_in_issuer.add_key("RS256")
    verification = verifier.verify(stand_in_issuer.token(kid=kid, aud=["https://other.example.com", RESOURCE]))
    assert verification is not None and verification.token.audience == ("https://other.example.com", RESOURCE)


@pytest.mark.parametrize("typ", ["JWT", "jwt", "application/at+jwt+x", None])
def test_a_token_without_the_at_jwt_type_is_refused(stand_in_issuer, verifier, typ):
    header = {} if typ is None else {"typ": typ}
    assert verifier.verify(stand_in_issuer.sign(header, stand_in_issuer.claims())) is None
    assert verifier.verify(stand_in_issuer.token()) is not None  # the same claims, typed: accepted


def test_alg_none_is_refused(stand_in_issuer, verifier):
    header = _b64(json.dumps({"alg": "none", "typ": "at+jwt", "kid": stand_in_issuer.current}).encode())
    payload = _b64(json.dumps(stand_in_issuer.claims()).encode())
    assert verifier.verify(f"{header}.{payload}.") is None


def test_hs256_with_the_public_key_as_secret_is_refused(stand_in_issuer, verifier):
    _algorithm, key = stand_in_issuer.keys[stand_in_issuer.current]
    secret = jwk.JWK(kty="oct", k=_b64(key.export_to_pem()))
    token = jws.JWS(json.dumps(stand_in_issuer.claims()).encode())
    header = {"alg": "HS256", "typ": "at+jwt", "kid": stand_in_issuer.current}
    token.add_signature(secret, alg="HS256", protected=json.dumps(header))
    assert verifier.verify(token.serialize(compact=True)) is None


def test_an_alg_that_does_not_match_the_keys_type_is_refused(stand_in_issuer, verifier):
    # An RS256 header naming the EC key: refused before any signature check.
    good = stand_in_issuer.token()
    header = _b64(json.dumps({"alg": "RS256", "typ": "at+jwt", "kid": stand_in_issuer.current}).encode())
    _h, payload, signature = good.split(".")
    assert verifier.verify(f"{header}.{payload}.{signature}") is None


def test_a_tampered_payload_is_refused(stand_in_issuer, verifier):
    header, _payload, signature = stand_in_issuer.token().split(".")
    forged = _b64(json.dumps(stand_in_issuer.claims(scope="ORG_BOOKING_WRITE")).encode())
    assert verifier.verify(f"{header}.{forged}.{signature}") is None


def test_an_unknown_kid_refetches_the_jwks_at_most_once_per_interval(stand_in_issuer, verifier, stand_in):
    assert verifier.verify(stand_in_issuer.token()) is not None
    assert stand_in.hits["/.well-known/jwks.json"] == 1
    stranger = stand_in_issuer.add_key("ES256", publish=False)
    assert verifier.verify(stand_in_issuer.token(kid=stranger)) is None
    assert stand_in.hits["/.well-known/jwks.json"] == 1  # fetched a moment ago: not asked again
    verifier.refetch_seconds = 0.3
    time.sleep(0.35)
    for _ in range(5):
        assert verifier.verify(stand_in_issuer.token(kid=stranger)) is None
    assert stand_in.hits["/.well-known/jwks.json"] == 2  # one refetch for five unknown-kid tokens


def test_a_rotated_in_key_is_fetched_and_trusted(stand_in_issuer, verifier, stand_in, settings):
    assert verifier.verify(stand_in_issuer.token()) is not None
    verifier.refetch_seconds = 0
    new = stand_in_issuer.add_key("ES256")  # published after this service fetched the JWKS
    assert verifier.verify(stand_in_issuer.token(kid=new)) is not None
    assert verifier.verify(stand_in_issuer.token()) is not None  # the old key still verifies its tokens
    assert stand_in.hits["/.well-known/jwks.json"] == 2


def test_a_key_withdrawn_from_the_jwks_stops_verifying_after_its_max_age(stand_in_issuer, verifier):
    old = stand_in_issuer.current
    assert verifier.verify(stand_in_issuer.token()) is not None
    stand_in_issuer.published.remove(old)
    stand_in_issuer.current = stand_in_issuer.add_key("ES256")
    assert verifier.verify(stand_in_issuer.token(kid=old)) is not None  # held until the JWKS is fetched again
    verifier.jwks_max_age = 0
    assert verifier.verify(stand_in_issuer.token(kid=old)) is None


def test_private_and_encryption_keys_in_the_jwks_are_ignored(stand_in_issuer, verifier):
    algorithm, key = stand_in_issuer.keys[stand_in_issuer.current]
    private = {**json.loads(key.export_private()), "kid": "leaked"}
    encryption = {**json.loads(key.export_public()), "kid": "enc", "use": "enc"}
    stand_in_issuer.publish_jwks(extra=[private, encryption])
    stand_in_issuer.keys["leaked"] = (algorithm, key)
    stand_in_issuer.keys["enc"] = (algorithm, key)
    assert verifier.verify(stand_in_issuer.token(kid="leaked")) is None
    assert verifier.verify(stand_in_issuer.token(kid="enc")) is None
    assert verifier.verify(stand_in_issuer.token()) is not None


def test_expiry_and_not_before_with_leeway(stand_in_issuer, verifier):
    now = int(time.time())
    assert verifier.verify(stand_in_issuer.token(exp=now - 10)) is not None  # inside the 30 s leeway
    assert verifier.verify(stand_in_issuer.token(exp=now - 31)) is None
    assert verifier.verify(stand_in_issuer.token(nbf=now + 10)) is not None
    assert verifier.verify(stand_in_issuer.token(nbf=now + 120)) is None
    assert verifier.verify(stand_in_issuer.token(iat=now + 120)) is None  # issued in the future, no nbf
    assert verifier.verify(stand_in_issuer.token(exp=None)) is None
    assert verifier.verify(stand_in_issuer.token(exp="soon")) is None


@pytest.mark.parametrize(
    "changes",
    [
        {"iss": "https://evil.example.com"},
        {"aud": "https://other.example.com/v2"},
        {"aud": ["https://other.example.com/v2"]},
        {"aud": None},
        {"sub": None},
        {"client_id": None},
        {"scope": None},
        {"scope": ["BOOKING_READ"]},
    ],
)
def test_wrong_issuer_audience_or_missing_claims_are_refused(stand_in_issuer, verifier, changes):
    assert verifier.verify(stand_in_issuer.token(**changes)) is None


def test_a_revoked_token_is_refused_once_the_list_is_fetched_again(stand_in_issuer, verifier, stand_in):
    stand_in_issuer.ttl = 1
    stand_in_issuer.publish_list()
    assert verifier.verify(stand_in_issuer.token()) is not None
    stand_in_issuer.revoke(3)
    assert verifier.verify(
        stand_in_issuer.token(
            status={"status_list": {"idx": 4, "uri": stand_in_issuer.url + stand_in_issuer.list_path}}
        )
    )
    time.sleep(1.1)  # the list's ttl
    assert verifier.verify(stand_in_issuer.token()) is None
    assert verifier.verify(
        stand_in_issuer.token(
            status={"status_list": {"idx": 4, "uri": stand_in_issuer.url + stand_in_issuer.list_path}}
        )
    )
    assert stand_in.hits[stand_in_issuer.list_path] == 2  # once per ttl, not per request


def test_a_list_fetched_within_its_ttl_is_not_fetched_again(stand_in_issuer, verifier, stand_in):
    for _ in range(20):
        assert verifier.verify(stand_in_issuer.token()) is not None
    assert stand_in.hits[stand_in_issuer.list_path] == 1


@pytest.mark.parametrize(
    "status",
    [
        None,
        {},
        {"status_list": {"idx": -1, "uri": "{url}/v2/auth/oauth2/status-lists/1"}},
        {"status_list": {"idx": "3", "uri": "{url}/v2/auth/oauth2/status-lists/1"}},
        {"status_list": {"idx": 10**6, "uri": "{url}/v2/auth/oauth2/status-lists/1"}},  # beyond the list
        {"status_list": {"idx": 3}},
    ],
)
def test_a_token_without_a_usable_status_is_refused(stand_in_issuer, verifier, status):
    if status and "uri" in status.get("status_list", {}):
        status["status_list"]["uri"] = status["status_list"]["uri"].format(url=stand_in_issuer.url)
    assert (
        verifier.verify(
            stand_in_issuer.token(status=status) if status is not None else stand_in_issuer.token(status=None)
        )
        is None
    )


def test_a_status_list_on_another_origin_is_never_fetched(stand_in_issuer, verifier, stand_in):
    elsewhere = StandIn()
    try:
        elsewhere.routes["/list"] = stand_in.routes[stand_in_issuer.list_path]
        token = stand_in_issuer.token(status={"status_list": {"idx": 3, "uri": elsewhere.url + "/list"}})
        assert verifier.verify(token) is None
        assert elsewhere.hits == {}
    finally:
        elsewhere.stop()


def test_a_forged_or_mistyped_status_list_is_unavailability_not_acceptance(stand_in_issuer, verifier):
    stranger = stand_in_issuer.add_key("ES256", publish=False)
    stand_in_issuer.publish_list(kid=stranger)  # signed by a key the JWKS does not have
    with pytest.raises(AuthorizationServerUnavailable):
        verifier.verify(stand_in_issuer.token())
    stand_in_issuer.publish_list(typ="JWT")
    with pytest.raises(AuthorizationServerUnavailable):
        verifier.verify(stand_in_issuer.token())
    stand_in_issuer.publish_list(sub=stand_in_issuer.url + "/v2/auth/oauth2/status-lists/2")  # another list's
    with pytest.raises(AuthorizationServerUnavailable):
        verifier.verify(stand_in_issuer.token())
    stand_in_issuer.publish_list()
    assert verifier.verify(stand_in_issuer.token()) is not None


def test_the_authorization_server_down_serves_the_last_list_until_the_staleness_bound(
    stand_in_issuer, stand_in, settings
):
    settings.OAUTH_STATUS_LIST_MAX_STALENESS = 2
    stand_in_issuer.ttl = 1
    stand_in_issuer.publish_list()
    verifier = JwtVerifier()
    assert verifier.verify(stand_in_issuer.token()) is not None
    stand_in.routes[stand_in_issuer.list_path] = (503, "text/plain", b"down")
    time.sleep(1.1)  # past the ttl, within the bound: the held list still answers
    assert verifier.verify(stand_in_issuer.token()) is not None
    time.sleep(1.0)  # past the bound
    with pytest.raises(AuthorizationServerUnavailable):
        verifier.verify(stand_in_issuer.token())


def test_no_jwks_at_all_is_unavailability(stand_in_issuer, stand_in):
    stand_in.routes.pop("/.well-known/jwks.json")
    with pytest.raises(AuthorizationServerUnavailable):
        JwtVerifier().verify(stand_in_issuer.token())


@pytest.mark.parametrize(
    "raw",
    ["a.b.c", "..", "eyJ.eyJ.", "x" * 9000, "a.b.c.d", "e30.e30.e30", "W10.W10.", "bnVsbA.bnVsbA.AA", "\x00.\x00.\x00"],
)
def test_garbage_is_refused_never_an_error(verifier, raw):
    assert verifier.verify(raw) is None


def test_an_opaque_token_is_refused_without_introspection_credentials(verifier):
    assert verifier.verify("an-opaque-token-value") is None


def test_an_opaque_token_goes_to_introspection_when_configured(stand_in_issuer, settings, monkeypatch):
    from scopes import introspection

    settings.OAUTH_INTROSPECTION_URL = stand_in_issuer.url + "/introspect"
    settings.OAUTH_RESOURCE_SERVER_ID = "rs"
    settings.OAUTH_RESOURCE_SERVER_SECRET = "secret"
    asked = []
    monkeypatch.setattr(introspection.IntrospectionVerifier, "verify", lambda self, raw: asked.append(raw) or "ok")
    verifier = JwtVerifier()
    assert verifier.verify("an-opaque-token-value") == "ok" and asked == ["an-opaque-token-value"]
    assert verifier.verify(stand_in_issuer.token()) is not None and asked == ["an-opaque-token-value"]


def test_https_is_required_except_on_loopback(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.OAUTH_RESOURCE_URI = RESOURCE
    settings.OAUTH_ISSUER = "http://auth.example.com"
    with pytest.raises(ImproperlyConfigured, match="https"):
        JwtVerifier()
    settings.OAUTH_ISSUER = "https://auth.example.com"
    assert JwtVerifier().jwks_url == "https://auth.example.com/.well-known/jwks.json"
