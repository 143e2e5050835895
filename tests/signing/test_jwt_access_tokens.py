"""JWT access tokens (RFC 9068) for resource servers registered with `token_format = jwt`, and the
token status lists that carry their revocation (signing.jwtokens, signing.statuslist)."""

import base64
import json
import zlib
from io import StringIO
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from jwcrypto import jwk, jws

from oauthclients import services
from oauthclients.models import AccessToken, RefreshToken, digest
from signing.keys import signing_key_create, signing_key_retire
from signing.models import StatusList, StatusRevocation
from signing.statuslist import allocator, status_lists_sweep
from tests.oauthclients.service_helpers import status_bit
from tests.oauthflows.helpers import (
    INTROSPECT,
    REVOKE,
    authorize_url,
    basic,
    client_post,
    consent,
    exchange,
    get_code,
    query_of,
    refresh,
)

JWT_SERVICE = "https://bookings.example.com/v2"
OPAQUE_SERVICE = "https://calendar.example.com/v2"
STATUS_LISTS = "/v2/auth/oauth2/status-lists/"


def b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def header_of(token: str) -> dict:
    return json.loads(b64(token.split(".")[0]))


def claims_of(token: str) -> dict:
    return json.loads(b64(token.split(".")[1]))


def is_jwt(token: str) -> bool:
    return token.count(".") == 2


@pytest.fixture(autouse=True)
def keys(db):
    allocator.forget()  # each test's database starts its indices again
    return signing_key_create(algorithm="ES256"), signing_key_create(algorithm="RS256")


@pytest.fixture
def jwt_service(reviewer):
    created = services.resource_server_create(
        owner=reviewer, name="Bookings", resource_uri=JWT_SERVICE, actor=reviewer, token_format="jwt"
    )
    return created.client, created.secret.plaintext


@pytest.fixture
def opaque_service(reviewer):
    created = services.resource_server_create(owner=reviewer, name="Calendar", resource_uri=OPAQUE_SERVICE)
    return created.client, created.secret.plaintext


def tokens_exchanged(browser, api, confidential, *resources, scope="PROFILE_READ BOOKING_READ") -> dict:
    client, secret = confidential
    url = authorize_url(client, scope=scope) + "".join(f"&{urlencode({'resource': uri})}" for uri in resources)
    response = consent(browser, url)
    assert response.status_code == 302, response.content[:300]
    code = query_of(response["Location"])["code"]
    response = exchange(api, client, code, secret=secret)
    assert response.status_code == 200, response.content
    return response.json()


def status_list(api, uri: str) -> tuple[dict, dict, bytes]:
    response = api.get(uri.removeprefix(settings.OAUTH_ISSUER))
    assert response.status_code == 200, response.content
    token = response.content.decode()
    claims = claims_of(token)
    return header_of(token), claims, zlib.decompress(b64(claims["status_list"]["lst"]))


def bit_of(api, access_token: str) -> int:
    reference = claims_of(access_token)["status"]["status_list"]
    _header, _claims, bits = status_list(api, reference["uri"])
    return bits[reference["idx"] // 8] >> (reference["idx"] % 8) & 1


def verified(api, token: str) -> dict:
    """The JWT verified with the published JWKS, as a resource server does."""
    keys = jwk.JWKSet.from_json(api.get("/.well-known/jwks.json").content)
    signed = jws.JWS()
    signed.deserialize(token)
    signed.verify(keys.get_key(header_of(token)["kid"]), alg=header_of(token)["alg"])
    return json.loads(signed.payload)


def test_a_token_for_a_jwt_resource_server_is_an_rfc9068_jwt(browser, api, confidential, jwt_service, keys, end_user):
    issued = tokens_exchanged(browser, api, confidential, JWT_SERVICE)
    token = issued["access_token"]
    assert is_jwt(token) and issued["token_type"] == "bearer" and issued["expires_in"] == 1800
    assert not is_jwt(issued["refresh_token"])
    header = header_of(token)
    assert header == {"alg": "ES256", "kid": keys[0].kid, "typ": "at+jwt"}
    claims = verified(api, token)
    assert claims["iss"] == settings.OAUTH_ISSUER and claims["sub"] == str(end_user.pk)
    assert claims["aud"] == JWT_SERVICE and claims["client_id"] == confidential[0].client_id
    assert claims["scope"] == "PROFILE_READ BOOKING_READ"
    assert claims["exp"] - claims["iat"] == 1800 and claims["auth_time"] <= claims["iat"]
    assert len(b64(claims["jti"])) >= 16
    reference = claims["status"]["status_list"]
    assert reference["uri"].startswith(settings.OAUTH_ISSUER + STATUS_LISTS) and isinstance(reference["idx"], int)
    # The row is kept as for an opaque token: a digest, never the JWT.
    row = AccessToken.objects.get(token_checksum=digest(token))
    assert row.token == "" and (row.status_list, row.status_index) == (
        int(reference["uri"].rsplit("/", 1)[1]),
        reference["idx"],
    )
    assert bit_of(api, token) == 0


def test_two_tokens_never_share_a_status_index(browser, api, confidential, jwt_service):
    references = set()
    for _ in range(5):
        claims = claims_of(tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"])
        references.add((claims["status"]["status_list"]["uri"], claims["status"]["status_list"]["idx"]))
        assert claims["jti"] not in {None, ""}
    assert len(references) == 5


@pytest.mark.parametrize("audience", ["none", "own", "opaque", "mixed"])
def test_everything_else_stays_opaque(browser, api, confidential, jwt_service, opaque_service, audience):
    resources = {
        "none": (),
        "own": (settings.OAUTH_RESOURCE_URI,),
        "opaque": (OPAQUE_SERVICE,),
        "mixed": (JWT_SERVICE, OPAQUE_SERVICE),
    }[audience]
    token = tokens_exchanged(browser, api, confidential, *resources)["access_token"]
    assert not is_jwt(token)
    assert AccessToken.objects.get(token_checksum=digest(token)).status_index is None


def test_an_rs256_deployment_signs_with_its_rs256_key(browser, api, confidential, jwt_service, keys, settings):
    settings.OAUTH_JWT_ACCESS_TOKEN_ALGORITHM = "RS256"
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    assert header_of(token)["alg"] == "RS256" and header_of(token)["kid"] == keys[1].kid
    assert verified(api, token)["aud"] == JWT_SERVICE


def test_without_a_signing_key_the_exchange_is_refused_and_the_code_kept(browser, api, confidential, jwt_service, keys):
    client, secret = confidential
    code = get_code(browser, client, resource=JWT_SERVICE)
    signing_key_retire(kid=keys[0].kid)
    refused = exchange(api, client, code, secret=secret)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_request"
    assert "no ES256 signing key" in refused.json()["error_description"]
    signing_key_create(algorithm="ES256")
    answered = exchange(api, client, code, secret=secret)
    assert answered.status_code == 200 and is_jwt(answered.json()["access_token"])


def test_introspection_and_the_local_verifier_know_a_jwt_by_its_row(browser, api, confidential, jwt_service):
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    server, secret = jwt_service
    answer = client_post(api, INTROSPECT, server, {"token": token}, auth=basic(server.client_id, secret)).json()
    assert (
        answer["active"] is True and answer["aud"] == [JWT_SERVICE] and answer["scope"] == "PROFILE_READ BOOKING_READ"
    )
    # A forged JWT with the same claims has another digest: unknown.
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert client_post(api, INTROSPECT, server, {"token": forged}, auth=basic(server.client_id, secret)).json() == {
        "active": False
    }


def test_revoking_a_jwt_sets_its_bit(browser, api, confidential, jwt_service):
    client, secret = confidential
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    other = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    assert client_post(api, REVOKE, client, {"token": token}, secret=secret).status_code == 200
    assert bit_of(api, token) == 1 and bit_of(api, other) == 0
    server, server_secret = jwt_service
    assert client_post(
        api, INTROSPECT, server, {"token": token}, auth=basic(server.client_id, server_secret)
    ).json() == {"active": False}


def test_revoking_the_refresh_token_sets_the_bit_of_its_access_token(browser, api, confidential, jwt_service):
    client, secret = confidential
    issued = tokens_exchanged(browser, api, confidential, JWT_SERVICE)
    client_post(
        api, REVOKE, client, {"token": issued["refresh_token"], "token_type_hint": "refresh_token"}, secret=secret
    )
    assert bit_of(api, issued["access_token"]) == 1


def test_a_refresh_issues_a_new_jwt_and_ends_the_old_one(browser, api, confidential, jwt_service):
    client, secret = confidential
    first = tokens_exchanged(browser, api, confidential, JWT_SERVICE)
    response = refresh(api, client, first["refresh_token"], secret=secret)
    assert response.status_code == 200, response.content
    second = response.json()
    assert is_jwt(second["access_token"])
    old, new = claims_of(first["access_token"]), claims_of(second["access_token"])
    assert new["aud"] == JWT_SERVICE and new["auth_time"] == old["auth_time"] and new["jti"] != old["jti"]
    assert bit_of(api, first["access_token"]) == 1 and bit_of(api, second["access_token"]) == 0
    assert RefreshToken.objects.get(token_checksum=digest(second["refresh_token"])).auth_time is not None


def test_a_replayed_refresh_token_sets_the_bits_of_its_family(browser, api, confidential, jwt_service):
    client, secret = confidential
    first = tokens_exchanged(browser, api, confidential, JWT_SERVICE)
    second = refresh(api, client, first["refresh_token"], secret=secret).json()
    RefreshToken.objects.filter(token_checksum=digest(first["refresh_token"])).update(revoked="2000-01-01T00:00:00Z")
    assert refresh(api, client, first["refresh_token"], secret=secret).status_code == 400
    assert bit_of(api, second["access_token"]) == 1


def test_connected_apps_revocation_sets_the_bits(browser, api, confidential, jwt_service):
    client, _secret = confidential
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    answer = browser.post(f"/settings/apps/{client.client_id}/revoke/")
    assert answer.status_code in (302, 303)
    assert bit_of(api, token) == 1


def test_rejecting_the_client_sets_the_bits(browser, api, confidential, jwt_service, reviewer):
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    services.client_reject(client=confidential[0], actor=reviewer, reason="Abuse")
    assert bit_of(api, token) == 1


def test_deactivating_or_deleting_the_user_sets_the_bits(browser, api, confidential, jwt_service, end_user):
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    end_user.is_active = False
    end_user.save()
    assert bit_of(api, token) == 1

    user = get_user_model().objects.create_user("second", password="pw-second-123456")
    second = Client()
    second.force_login(user)
    token = tokens_exchanged(second, api, confidential, JWT_SERVICE)["access_token"]
    assert bit_of(api, token) == 0
    user.delete()
    assert bit_of(api, token) == 1


def test_a_revoked_secret_does_not_end_tokens(browser, api, confidential, jwt_service, reviewer):
    # Revoking a client secret stops the client authenticating; the users' tokens stay (as opaque).
    client, _secret = confidential
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    old = client.secrets.get()
    services.client_secret_create(client=client, actor=reviewer)
    services.client_secret_revoke(client=client, secret_id=old.pk, actor=reviewer)
    assert bit_of(api, token) == 0


def test_the_status_list_document(browser, api, confidential, jwt_service, keys):
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    uri = claims_of(token)["status"]["status_list"]["uri"]
    response = Client().get(uri.removeprefix(settings.OAUTH_ISSUER))
    assert response["Content-Type"] == "application/statuslist+jwt"
    assert response["Cache-Control"] == "public, max-age=10" and response["Access-Control-Allow-Origin"] == "*"
    header, claims, bits = status_list(api, uri)
    assert header == {"alg": "ES256", "kid": keys[0].kid, "typ": "statuslist+jwt"}
    assert claims["sub"] == uri and claims["ttl"] == 10 and claims["status_list"]["bits"] == 1
    assert claims["exp"] > claims["iat"] + 10
    assert len(bits) == 131072 // 8  # OAUTH_STATUS_LIST_SIZE's default
    assert verified(api, response.content.decode())["sub"] == uri


@pytest.mark.parametrize("path", ["999999", "0x1", "-1", "a", "1/2"])
def test_an_unknown_list_is_404_never_500(api, path):
    assert api.get(STATUS_LISTS + path).status_code == 404


def test_a_list_without_a_signing_key_is_503(browser, api, confidential, jwt_service, keys):
    token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    signing_key_retire(kid=keys[0].kid)
    response = api.get(claims_of(token)["status"]["status_list"]["uri"].removeprefix(settings.OAUTH_ISSUER))
    assert response.status_code == 503 and response["Retry-After"] == "5"


def test_indices_fill_lists_in_turn_and_expired_lists_are_swept(settings, browser, api, confidential, jwt_service):
    settings.OAUTH_STATUS_LIST_SIZE = 256  # one block per list
    references = [
        claims_of(tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"])["status"]["status_list"]
        for _ in range(2)
    ]
    assert references[0]["uri"] == references[1]["uri"] and references[1]["idx"] == references[0]["idx"] + 1
    allocator.forget()  # as a process restarting: the next block opens the next list
    third_token = tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"]
    third = claims_of(third_token)["status"]["status_list"]
    assert third["uri"] != references[0]["uri"] and third["idx"] == 0
    assert StatusList.objects.count() == 2
    assert status_lists_sweep() == 0  # both hold live tokens
    StatusList.objects.update(last_issued="2000-01-01T00:00:00Z")
    # No block reserved into either for long, but a process may still hand out an old block's
    # indices: a list with a live token stays.
    assert status_lists_sweep() == 0
    first = int(references[0]["uri"].rsplit("/", 1)[1])
    AccessToken.objects.filter(status_list=first).update(expires="2000-01-01T00:00:00Z")
    StatusRevocation.objects.create(status_list=first, index=5)
    assert status_lists_sweep() == 1  # the older one; the newest stays for the blocks to come
    assert api.get(references[0]["uri"].removeprefix(settings.OAUTH_ISSUER)).status_code == 404
    assert not StatusRevocation.objects.filter(status_list=first).exists()
    number = int(third["uri"].rsplit("/", 1)[1])
    assert status_bit(number, 0) == 0


def test_the_format_is_a_resource_servers_and_needs_a_resource_uri(reviewer, confidential, jwt_service):
    with pytest.raises(ValidationError, match="need a resource URI"):
        services.resource_server_create(owner=reviewer, name="No URI", token_format="jwt")
    with pytest.raises(ValidationError, match="opaque or jwt"):
        services.resource_server_create(owner=reviewer, name="Odd", resource_uri=OPAQUE_SERVICE, token_format="paseto")
    with pytest.raises(ValidationError, match="Only a resource server"):
        services.resource_server_token_format_set(client=confidential[0], token_format="jwt")
    server = services.resource_server_token_format_set(client=jwt_service[0], token_format="opaque", actor=reviewer)
    assert server.token_format == "opaque"
    assert server.audit_events.filter(detail__token_format="opaque").exists()


def test_switching_a_resource_server_to_opaque_takes_effect_for_new_tokens(browser, api, confidential, jwt_service):
    services.resource_server_token_format_set(client=jwt_service[0], token_format="opaque")
    assert not is_jwt(tokens_exchanged(browser, api, confidential, JWT_SERVICE)["access_token"])


def run(*args) -> dict:
    out = StringIO()
    call_command("oauthclient", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_the_command_line(reviewer):
    made = run(
        "create",
        "--resource-server",
        "--owner",
        reviewer.username,
        "--name",
        "Rooms",
        "--resource-uri",
        "https://rooms.example.com/v2",
        "--token-format",
        "jwt",
    )
    assert made["token_format"] == "jwt"
    assert run("set-token-format", made["client_id"], "opaque")["token_format"] == "opaque"
    with pytest.raises(CommandError, match="need a resource URI"):
        run("create", "--resource-server", "--owner", reviewer.username, "--name", "X", "--token-format", "jwt")
    with pytest.raises(CommandError, match="for resource servers only"):
        run(
            "create",
            "--owner",
            reviewer.username,
            "--name",
            "App",
            "--redirect-uri",
            "https://app.example.com/cb",
            "--scope",
            "PROFILE_READ",
            "--purpose",
            "Test.",
            "--token-format",
            "jwt",
        )
