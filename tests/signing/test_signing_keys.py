"""Signing keys (signing.keys, `manage.py signingkey`, GET /.well-known/jwks.json): made with
jwcrypto, the private part stored only encrypted, rotated with overlap, published until the last
token they could have signed has expired."""

import json
import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.utils import timezone
from jwcrypto import jwk, jws

from config.checks import signing_keys_ready
from signing import keys
from signing.models import SigningKey

JWKS = "/.well-known/jwks.json"


def run(*args) -> list[dict]:
    out = StringIO()
    call_command("signingkey", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_create_makes_a_key_of_each_algorithm_that_signs_and_verifies(db):
    for algorithm, kty in (("ES256", "EC"), ("RS256", "RSA")):
        (made,) = run("create", "--alg", algorithm)
        assert made["algorithm"] == algorithm and made["state"] == "signing"
        key = SigningKey.objects.get(kid=made["kid"])
        assert key.public_jwk["kty"] == kty and key.public_jwk["kid"] == key.kid and key.public_jwk["use"] == "sig"
        assert "d" not in key.public_jwk and "p" not in key.public_jwk
        private = keys.private_key(key)
        token = jws.JWS(b"payload")
        token.add_signature(private, alg=algorithm, protected=json.dumps({"alg": algorithm, "kid": key.kid}))
        checked = jws.JWS()
        checked.deserialize(token.serialize(compact=True))
        checked.verify(jwk.JWK(**key.public_jwk), alg=algorithm)
        assert keys.signing_key_current(algorithm) == key


def test_the_private_part_is_never_stored_or_logged_in_plain_text(db, caplog):
    caplog.set_level(logging.DEBUG)
    made = run("create", "--alg", "RS256") + run("create", "--alg", "ES256")
    secrets = []
    for row in made:
        private = json.loads(keys.private_key(SigningKey.objects.get(kid=row["kid"])).export_private())
        secrets += [private["d"]] + [private[name] for name in ("p", "q", "dp", "dq", "qi") if name in private]
    dumped = StringIO()
    call_command("dumpdata", stdout=dumped)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM oauthclients_signingkey")
        raw = json.dumps(cursor.fetchall(), default=str)
    assert raw.count("eyJ") >= 2  # positive control: the JWE envelopes are in the rows read
    for secret in secrets:
        assert secret not in dumped.getvalue()
        assert secret not in raw
        assert secret not in caplog.text
    assert all(secret not in json.dumps(row) for row in made for secret in secrets)


def test_without_the_encryption_key_nothing_is_made_or_read(db, settings):
    (made,) = run("create")
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = ""
    with pytest.raises(CommandError, match="OAUTH_SIGNING_KEY_ENCRYPTION_KEY"):
        run("create")
    with pytest.raises(ImproperlyConfigured):
        keys.private_key(SigningKey.objects.get(kid=made["kid"]))
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = "another-key-of-at-least-thirty-two-characters"
    with pytest.raises(keys.SigningKeyUnusable, match="does not decrypt"):  # a different key cannot open it
        keys.private_key(SigningKey.objects.get(kid=made["kid"]))


def test_rotation_publishes_first_and_signs_after_the_overlap(db, api, settings):
    settings.OAUTH_SIGNING_KEY_PUBLISH_AHEAD = 600
    (old,) = run("create", "--alg", "ES256")
    (new,) = run("rotate", "--alg", "ES256")
    assert new["state"] == "published"
    published = {key["kid"] for key in api.get(JWKS).json()["keys"]}
    assert published == {old["kid"], new["kid"]}
    assert keys.signing_key_current("ES256").kid == old["kid"]  # the old one signs until the overlap ends
    # After the overlap the new one signs; the old one is still published for its tokens' lifetime.
    SigningKey.objects.filter(kid=new["kid"]).update(signs_from=timezone.now() - timedelta(seconds=1))
    SigningKey.objects.filter(kid=old["kid"]).update(retired_at=timezone.now() - timedelta(seconds=1))
    assert keys.signing_key_current("ES256").kid == new["kid"]
    assert {key["kid"] for key in api.get(JWKS).json()["keys"]} == {old["kid"], new["kid"]}
    # Once every token it could have signed has expired, it is no longer published.
    gone = timezone.now() - keys.published_lifetime() - timedelta(seconds=1)
    SigningKey.objects.filter(kid=old["kid"]).update(retired_at=gone)
    assert {key["kid"] for key in api.get(JWKS).json()["keys"]} == {new["kid"]}
    states = {row["kid"]: row["state"] for row in run("list")}
    assert states == {old["kid"]: "expired", new["kid"]: "signing"}


def test_the_first_key_of_an_algorithm_signs_at_once_even_by_rotate(db):
    (made,) = run("rotate", "--alg", "RS256")
    assert made["state"] == "signing"


def test_retire_stops_signing_now_and_unknown_kids_are_refused(db):
    (made,) = run("create")
    (retired,) = run("retire", "--", made["kid"])
    assert retired["state"] == "published" and retired["retired_at"]
    assert keys.signing_key_current("ES256") is None
    with pytest.raises(CommandError, match="No signing key has kid"):
        run("retire", "nope")


def test_the_jwks_is_public_cacheable_and_holds_public_parts_only(db, api):
    run("create", "--alg", "RS256")
    response = api.get(JWKS, HTTP_ORIGIN="https://rp.example")
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=300"
    assert response["Access-Control-Allow-Origin"] == "*"
    (key,) = response.json()["keys"]
    assert set(key) == {"kty", "n", "e", "kid", "alg", "use"}


def test_the_metadata_names_the_jwks(db, api):
    assert api.get("/.well-known/oauth-authorization-server").json()["jwks_uri"] == "http://testserver" + JWKS


def test_check_deploy_errors_without_a_key_or_an_encryption_key(db, settings):
    assert [problem.id for problem in signing_keys_ready(databases=["default"])] == ["config.E004"]
    assert signing_keys_ready() == []  # without --database, no database question
    run("create")  # ES256
    # OpenID Connect ID tokens are RS256 by default: a warning until that key exists too.
    assert [problem.id for problem in signing_keys_ready(databases=["default"])] == ["config.W003"]
    run("create", "--alg", "RS256")
    assert signing_keys_ready(databases=["default"]) == []
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = "short"
    assert [problem.id for problem in signing_keys_ready(databases=["default"])] == ["config.E003"]
    with pytest.raises(SystemCheckError, match="config.E003"):
        call_command("check", "--deploy", "--database", "default", "--tag", "security")


def test_seed_demo_makes_one_key_per_algorithm_once(db, settings):
    settings.DEBUG = True
    call_command("seed_demo", stdout=StringIO())
    call_command("seed_demo", stdout=StringIO())
    assert sorted(SigningKey.objects.values_list("algorithm", flat=True)) == ["ES256", "RS256"]


def test_seed_demo_without_an_encryption_key_makes_no_key_and_says_so(db, settings):
    settings.DEBUG = True
    settings.OAUTH_SIGNING_KEY_ENCRYPTION_KEY = ""
    err = StringIO()
    call_command("seed_demo", stdout=StringIO(), stderr=err)
    assert "No signing key made: OAUTH_SIGNING_KEY_ENCRYPTION_KEY" in err.getvalue()
    assert not SigningKey.objects.exists()


def test_check_deploy_warns_when_jwt_access_tokens_have_no_current_key(db, settings, reviewer):
    from oauthclients import services

    run("create", "--alg", "RS256")
    run("create")  # ES256, the JWT access tokens' algorithm by default
    services.resource_server_create(
        owner=reviewer, name="Bookings", resource_uri="https://bookings.example.com/v2", token_format="jwt"
    )
    assert signing_keys_ready(databases=["default"]) == []
    es256 = SigningKey.objects.get(algorithm="ES256")
    run("retire", "--", es256.kid)  # still published, no longer signing
    assert [problem.id for problem in signing_keys_ready(databases=["default"])] == ["config.W004"]
    settings.OAUTH_JWT_ACCESS_TOKEN_ALGORITHM = "RS256"
    assert signing_keys_ready(databases=["default"]) == []


def test_a_key_id_beginning_with_a_dash_is_retired_after_the_separator(db):
    """A kid is a base64url thumbprint: one in 64 begins with `-`, which argparse reads as an
    option unless `--` comes first (docs/administering.md says so; CI met one)."""
    from django.core.management.base import CommandError

    (made,) = run("create")
    dashed = "-" + made["kid"][1:]
    SigningKey.objects.filter(kid=made["kid"]).update(kid=dashed)
    with pytest.raises(CommandError):
        run("retire", dashed)
    (retired,) = run("retire", "--", dashed)
    assert retired["kid"].startswith("-")
