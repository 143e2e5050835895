"""Dynamic client registration (RFC 7591) and the unverified tier (docs/agents.md).

Anyone may register; the client is *unverified*: any user may authorize it at once, but only for
scopes within settings.OAUTH_UNVERIFIED_SCOPES, at authorize, exchange and refresh alike.
Approval lifts the ceiling; rejection ends every token.
"""

import json

import pytest
from django.core.cache import caches
from django.core.management import call_command

from oauthclients import services
from oauthclients.models import (
    AccessToken,
    AuditAction,
    ClientAuditEvent,
    ClientSecret,
    ClientStatus,
    OAuthClient,
    RefreshToken,
    digest,
)
from tests.oauthflows.helpers import (
    METADATA,
    authorize_url,
    exchange,
    get_code,
    me,
    pkce_pair,
    refresh,
)
from tests.oauthflows.test_token import assert_token_error

REGISTER = "/v2/auth/oauth2/register"
REDIRECT = "http://127.0.0.1:33418/callback"
READS = "PROFILE_READ BOOKING_READ"


def register(api, metadata, *, content_type="application/json", address="203.0.113.7"):
    body = metadata if isinstance(metadata, str | bytes) else json.dumps(metadata)
    return api.post(REGISTER, data=body, content_type=content_type, REMOTE_ADDR=address)


def agent_metadata(**extra):
    return {
        "client_name": "Claude Desktop",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "scope": "PROFILE_READ BOOKING_READ BOOKING_WRITE",
        **extra,
    }


def assert_registration_error(response, error):
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/json"
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {"error", "error_description"}
    assert body["error"] == error, body
    assert body["error_description"] and all(
        0x20 <= ord(ch) <= 0x7E and ch not in '"\\' for ch in body["error_description"]
    )
    return body["error_description"]


@pytest.fixture
def registered_agent(api, db):
    response = register(api, agent_metadata())
    assert response.status_code == 201, response.content
    return OAuthClient.objects.get(client_id=response.json()["client_id"])


def code_for(browser, client, scope=READS):
    verifier, challenge = pkce_pair()
    code = get_code(browser, client, scope=scope, code_challenge=challenge, code_challenge_method="S256")
    return code, verifier


def tokens_for(browser, api, client, scope=READS):
    code, verifier = code_for(browser, client, scope)
    response = exchange(api, client, code, verifier=verifier)
    assert response.status_code == 200, response.content
    return response.json()


# --- registration ---------------------------------------------------------------------------


def test_metadata_names_the_registration_endpoint(api, db):
    document = api.get(METADATA).json()
    assert document["registration_endpoint"].endswith(REGISTER)


def test_a_public_agent_registers_and_is_unverified(api, db):
    response = register(api, agent_metadata(client_uri="https://claude.ai", software_id="claude", contacts=["a@b.c"]))
    assert response.status_code == 201, response.content
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert body["client_name"] == "Claude Desktop"
    assert body["redirect_uris"] == [REDIRECT]
    assert body["token_endpoint_auth_method"] == "none"
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["response_types"] == ["code"]
    assert body["scope"] == "BOOKING_READ BOOKING_WRITE PROFILE_READ"  # catalog order
    assert body["client_uri"] == "https://claude.ai"
    assert body["software_id"] == "claude" and body["contacts"] == ["a@b.c"]
    assert isinstance(body["client_id_issued_at"], int)
    assert "client_secret" not in body
    client = OAuthClient.objects.get(client_id=body["client_id"])
    assert client.status == ClientStatus.UNVERIFIED
    assert client.registration_source == OAuthClient.RegistrationSource.DCR
    assert client.client_type == "public"
    assert not client.user.is_active and not client.user.has_usable_password()
    event = ClientAuditEvent.objects.get(client=client)
    assert event.action == AuditAction.CLIENT_SELF_REGISTERED
    assert "registered itself" in event.sentence()


def test_a_confidential_registration_gets_its_secret_once_stored_as_a_digest(api, db):
    response = register(api, agent_metadata(token_endpoint_auth_method="client_secret_basic"))
    assert response.status_code == 201, response.content
    body = response.json()
    secret = body["client_secret"]
    assert body["client_secret_expires_at"] == 0
    stored = ClientSecret.objects.get(client__client_id=body["client_id"])
    assert stored.digest == digest(secret)
    assert secret not in json.dumps(list(OAuthClient.objects.filter(client_id=body["client_id"]).values()), default=str)


def test_defaults_are_the_ceiling_and_a_name_from_the_redirect_host(api, db, settings):
    response = register(api, {"redirect_uris": ["https://agent.example.net/cb"]})
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body["scope"].split()) == set(settings.OAUTH_UNVERIFIED_SCOPES)
    assert body["client_name"] == "Unnamed app (agent.example.net)"
    assert body["token_endpoint_auth_method"] == "client_secret_basic" and body["client_secret"]


@pytest.mark.parametrize(
    "redirect_uris",
    [
        ["http://example.com/cb"],  # http off loopback
        ["https://app.example.com/cb#frag"],
        ["myapp:/cb"],  # a private-use scheme needs a dot (RFC 8252 §7.1)
        [],
        "https://app.example.com/cb",
        [42],
        ["javascript:alert(1)"],
    ],
)
def test_bad_redirect_uris_are_invalid_redirect_uri(api, db, redirect_uris):
    assert_registration_error(register(api, agent_metadata(redirect_uris=redirect_uris)), "invalid_redirect_uri")
    assert not OAuthClient.objects.exists()


def test_missing_redirect_uris_is_invalid_redirect_uri(api, db):
    metadata = agent_metadata()
    del metadata["redirect_uris"]
    assert_registration_error(register(api, metadata), "invalid_redirect_uri")


def test_loopback_native_and_https_redirects_are_accepted(api, db):
    uris = ["http://127.0.0.1/cb", "com.example.agent:/oauth", "https://agent.example.com/cb"]
    response = register(api, agent_metadata(redirect_uris=uris))
    assert response.status_code == 201, response.content
    assert response.json()["redirect_uris"] == uris


@pytest.mark.parametrize(
    "field, value",
    [
        ("client_name", "Good\r\nBcc: x@example.com"),
        ("client_name", "x" * 101),
        ("client_name", 5),
        ("client_name", "Good\u202eppA"),
        ("token_endpoint_auth_method", "private_key_jwt"),
        ("token_endpoint_auth_method", ["none"]),
        ("grant_types", ["client_credentials"]),
        ("grant_types", ["implicit"]),
        ("grant_types", ["refresh_token"]),
        ("grant_types", "authorization_code"),
        ("response_types", ["token"]),
        ("scope", "PROFILE_READ NOT_A_SCOPE"),
        ("scope", ["PROFILE_READ"]),
        ("scope", ""),
        ("client_uri", "ftp://example.com"),
        ("client_uri", "https://раураl.com"),
        ("policy_uri", "not a url"),
        ("tos_uri", "javascript:alert(1)"),
        ("contacts", "a@b.c"),
        ("contacts", ["a@b.c\r\nX: y"]),
        ("software_id", {"x": 1}),
        ("software_version", "1\n2"),
    ],
)
def test_bad_metadata_is_invalid_client_metadata(api, db, field, value):
    description = assert_registration_error(register(api, agent_metadata(**{field: value})), "invalid_client_metadata")
    assert field in description
    assert not OAuthClient.objects.exists()


def test_unknown_members_are_ignored(api, db):
    response = register(api, agent_metadata(jwks_uri="https://x.example/jwks", extra={"a": 1}))
    assert response.status_code == 201, response.content
    assert "jwks_uri" not in response.json()


@pytest.mark.parametrize(
    "body, content_type",
    [
        ("{}", "application/x-www-form-urlencoded"),
        ("redirect_uris=https://a.example/cb", "application/x-www-form-urlencoded"),
        ("{not json", "application/json"),
        ("[]", "application/json"),
        (b"\xff\xfe", "application/json"),
        ("[" * 5000 + "]" * 5000, "application/json"),  # deeper than the JSON parser goes
        ('{"redirect_uris": ["https://a.example/cb"]}', "text/plain"),
    ],
)
def test_bodies_other_than_a_json_object_are_refused_with_json(api, db, body, content_type):
    assert_registration_error(register(api, body, content_type=content_type), "invalid_client_metadata")


def test_nul_bytes_never_reach_the_database(api, db):
    for field in ("client_name", "client_uri", "software_id"):
        response = register(api, agent_metadata(**{field: "a\x00b"}))
        assert_registration_error(response, "invalid_client_metadata")
    assert_registration_error(
        register(api, agent_metadata(redirect_uris=["https://a.example/\x00"])), "invalid_redirect_uri"
    )


def test_only_post(api, db):
    assert api.get(REGISTER).status_code == 405


def test_registration_off_hides_the_endpoint(api, db, settings):
    settings.OAUTH_DYNAMIC_REGISTRATION = "off"
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": False}
    assert register(api, agent_metadata()).status_code == 404
    assert "registration_endpoint" not in api.get(METADATA).json()
    assert not OAuthClient.objects.exists()


def test_registration_as_pending_is_usable_by_nobody(api, browser, db, settings):
    settings.OAUTH_DYNAMIC_REGISTRATION = "pending"
    response = register(api, agent_metadata())
    assert response.status_code == 201
    client = OAuthClient.objects.get(client_id=response.json()["client_id"])
    assert client.status == ClientStatus.PENDING
    page = browser.get(authorize_url(client, scope="PROFILE_READ", code_challenge=pkce_pair()[1]))
    assert page.status_code == 400
    assert b"awaiting review" in page.content


def test_registrations_are_rate_limited_per_address_and_in_total(api, db, settings):
    caches[settings.RATELIMIT_CACHE].clear()
    settings.RATELIMITS = {
        **settings.RATELIMITS,
        "registrations_per_address": (3, 3600),
        "registrations_total": (5, 3600),
    }
    for _ in range(3):
        assert register(api, agent_metadata(), address="198.51.100.1").status_code == 201
    refused = register(api, agent_metadata(), address="198.51.100.1")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert refused.json()["error"]
    assert register(api, agent_metadata(), address="198.51.100.2").status_code == 201
    assert register(api, agent_metadata(), address="198.51.100.3").status_code == 201
    # The total is spent: a fresh address is refused too.
    assert register(api, agent_metadata(), address="198.51.100.4").status_code == 429
    assert OAuthClient.objects.count() == 5
    caches[settings.RATELIMIT_CACHE].clear()


def test_cors_lets_a_browser_agent_register(api, db):
    response = api.options(REGISTER, HTTP_ORIGIN="http://localhost:6274", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert response["Access-Control-Allow-Origin"] in ("*", "http://localhost:6274")


# --- the unverified tier ----------------------------------------------------------------------


def test_any_user_can_authorize_it_within_the_ceiling(browser, api, registered_agent):
    tokens = tokens_for(browser, api, registered_agent)
    assert set(tokens["scope"].split()) == {"PROFILE_READ", "BOOKING_READ"}
    assert me(api, tokens["access_token"]).status_code == 200


def test_beyond_the_ceiling_is_invalid_scope_on_a_page_not_the_redirect_uri(browser, registered_agent):
    # RFC 9700 §4.11.2: before its consent page, nobody is sent to an unverified client's URI.
    response = browser.get(
        authorize_url(registered_agent, scope="PROFILE_READ BOOKING_WRITE", code_challenge=pkce_pair()[1])
    )
    assert response.status_code == 400 and not response.has_header("Location")
    html = response.content.decode()
    assert "invalid_scope" in html and "BOOKING_WRITE" in html and "unverified" in html


def test_a_code_beyond_the_ceiling_is_refused_at_exchange(browser, api, registered_agent, settings):
    code, verifier = code_for(browser, registered_agent, "PROFILE_READ BOOKING_READ")
    settings.OAUTH_UNVERIFIED_SCOPES = ["PROFILE_READ"]  # lowered after the code was issued
    response = exchange(api, registered_agent, code, verifier=verifier)
    assert "BOOKING_READ" in assert_token_error(response, "invalid_scope")["error_description"]
    assert not AccessToken.objects.filter(application=registered_agent).exists()


def test_a_refresh_beyond_the_ceiling_is_refused(browser, api, registered_agent, settings):
    tokens = tokens_for(browser, api, registered_agent)
    settings.OAUTH_UNVERIFIED_SCOPES = ["PROFILE_READ"]
    assert_token_error(refresh(api, registered_agent, tokens["refresh_token"]), "invalid_scope")
    settings.OAUTH_UNVERIFIED_SCOPES = ["PROFILE_READ", "BOOKING_READ"]
    assert refresh(api, registered_agent, tokens["refresh_token"]).status_code == 200


def test_approval_lifts_the_ceiling(browser, api, registered_agent, reviewer):
    services.client_approve(client=registered_agent, actor=reviewer, expected_digest=registered_agent.review_digest())
    registered_agent.refresh_from_db()
    assert registered_agent.status == ClientStatus.APPROVED
    tokens = tokens_for(browser, api, registered_agent, scope="PROFILE_READ BOOKING_WRITE")
    assert set(tokens["scope"].split()) == {"PROFILE_READ", "BOOKING_WRITE"}


def test_rejection_ends_every_token(browser, api, registered_agent, reviewer):
    tokens = tokens_for(browser, api, registered_agent)
    services.client_reject(client=registered_agent, actor=reviewer, reason="Impersonates another app.")
    assert me(api, tokens["access_token"]).status_code == 401
    assert refresh(api, registered_agent, tokens["refresh_token"]).status_code in (400, 401)
    assert not AccessToken.objects.filter(application=registered_agent).exists()
    assert not RefreshToken.objects.filter(application=registered_agent, revoked__isnull=True).exists()


def test_it_is_listed_under_connected_apps(browser, api, registered_agent):
    tokens_for(browser, api, registered_agent)
    page = browser.get("/settings/apps/")
    assert registered_agent.name.encode() in page.content


def test_the_consent_page_warns_shows_the_redirect_host_and_no_logo(browser, registered_agent):
    page = browser.get(
        authorize_url(registered_agent, scope="PROFILE_READ", code_challenge=pkce_pair()[1], prompt="consent")
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert "Unverified app" in html
    assert "has not been reviewed" in html
    assert "127.0.0.1:33418" in html
    assert "<img" not in html.split("<main", 1)[-1].split("</main>", 1)[0]


def test_a_name_like_a_verified_apps_is_flagged(api, browser, confidential):
    verified, _secret = confidential
    response = register(api, agent_metadata(client_name=verified.name.upper()))
    client = OAuthClient.objects.get(client_id=response.json()["client_id"])
    page = browser.get(authorize_url(client, scope="PROFILE_READ", code_challenge=pkce_pair()[1], prompt="consent"))
    assert "same name as a verified app" in page.content.decode()


def test_a_distinct_name_is_not_flagged(browser, registered_agent, confidential):
    page = browser.get(
        authorize_url(registered_agent, scope="PROFILE_READ", code_challenge=pkce_pair()[1], prompt="consent")
    )
    assert "same name as a verified app" not in page.content.decode()


def test_oauthclient_list_and_approve(registered_agent, reviewer):
    from io import StringIO

    out = StringIO()
    call_command("oauthclient", "list", "--status", "unverified", stdout=out)
    listed = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(row["client_id"], row["status"]) for row in listed] == [(registered_agent.client_id, "unverified")]
    out = StringIO()
    call_command("oauthclient", "--actor", reviewer.username, "approve", registered_agent.client_id, stdout=out)
    registered_agent.refresh_from_db()
    assert registered_agent.status == ClientStatus.APPROVED


# --- cleanup of unused registrations ---------------------------------------------------------


def test_cleanup_removes_registrations_nobody_used(api, browser, db, settings):
    from datetime import timedelta

    from django.utils import timezone

    unused = OAuthClient.objects.get(client_id=register(api, agent_metadata()).json()["client_id"])
    used = OAuthClient.objects.get(client_id=register(api, agent_metadata()).json()["client_id"])
    fresh = OAuthClient.objects.get(client_id=register(api, agent_metadata()).json()["client_id"])
    tokens_for(browser, api, used)
    old = timezone.now() - timedelta(days=settings.OAUTH_UNUSED_REGISTRATION_DAYS + 1)
    OAuthClient.objects.filter(pk__in=[unused.pk, used.pk]).update(created=old)
    call_command("cleartokens_expired", stdout=__import__("io").StringIO())
    unused.refresh_from_db()
    used.refresh_from_db()
    fresh.refresh_from_db()
    assert unused.deleted_at is not None and unused.status == ClientStatus.REJECTED
    assert used.deleted_at is None and fresh.deleted_at is None
    event = ClientAuditEvent.objects.get(client=unused, action=AuditAction.CLIENT_UNUSED_REMOVED)
    assert "nobody authorized it" in event.sentence()


def test_post_logout_redirect_uris_are_registered_and_returned(api, db):
    response = register(api, agent_metadata(post_logout_redirect_uris=["https://agent.example.com/bye"]))
    assert response.status_code == 201, response.content
    assert response.json()["post_logout_redirect_uris"] == ["https://agent.example.com/bye"]
    client = OAuthClient.objects.get(client_id=response.json()["client_id"])
    assert client.post_logout_redirect_uri_list == ["https://agent.example.com/bye"]


@pytest.mark.parametrize(
    "value", ["https://agent.example.com/bye", [1], ["http://agent.example.com/bye"], ["https://a.example/#f"]]
)
def test_bad_post_logout_redirect_uris_are_invalid_client_metadata(api, db, value):
    response = register(api, agent_metadata(post_logout_redirect_uris=value))
    assert_registration_error(response, "invalid_client_metadata")
    assert not OAuthClient.objects.filter(registration_source=OAuthClient.RegistrationSource.DCR).exists()


class _Nobody:
    def has_permission(self, request):
        return False


@pytest.mark.parametrize("classes", [(), (_Nobody,)], ids=["none configured", "one says no"])
def test_registration_is_closed_unless_every_permission_class_says_yes(api, db, monkeypatch, classes):
    from oauth2_provider.settings import oauth2_settings

    monkeypatch.setattr(oauth2_settings, "DCR_REGISTRATION_PERMISSION_CLASSES", classes)
    response = register(api, agent_metadata())
    assert response.status_code == 403
    assert response.json()["error"] == "access_denied"
    assert not OAuthClient.objects.exists()


def test_the_admin_states_the_ceiling_the_tier_enforces(registered_agent, staff):
    from oauthclients.tier import unverified_ceiling

    page = staff.get(f"/admin/oauthclients/oauthclient/{registered_agent.pk}/change/").content.decode()
    assert f"users can grant it only {', '.join(sorted(unverified_ceiling()))};" in page
    assert "openid" in unverified_ceiling()  # the OpenID scopes are within it, and said to be
