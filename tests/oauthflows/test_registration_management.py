"""RFC 7592 client configuration for self-registered (RFC 7591) clients (docs/agents.md).

The registration answer carries a registration access token (stored as a digest) and the
client's configuration URI; with that token as a bearer the client reads, replaces and deletes its
registration. Each update rotates the token; updates follow the registration's rules; an approved
client that changes what review covers goes back to review; deleting ends its grants. Every
refusal is a 401 (token) or a 400 (metadata), never a 500; calls are rate-limited and readable
cross-origin from the client's own origins only."""

import json

import pytest
from django.core.cache import caches

from oauthclients import services
from oauthclients.models import AccessToken, AuditAction, ClientAuditEvent, ClientStatus, OAuthClient, digest
from tests.oauthflows.test_registration import REDIRECT, agent_metadata, register, tokens_for

ISSUER_PATH = "/v2/auth/oauth2/register/"


@pytest.fixture
def registered(api, db):
    response = register(api, agent_metadata())
    assert response.status_code == 201, response.content
    return response.json()


def uri_path(answer) -> str:
    return answer["registration_client_uri"].split("://", 1)[1].split("/", 1)[1].join(["/", ""])


def call(api, method, answer, *, token=None, body=None, address="203.0.113.7", **headers):
    token = answer["registration_access_token"] if token is None else token
    extra = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    kwargs = {"data": json.dumps(body), "content_type": "application/json"} if body is not None else {}
    return getattr(api, method)(uri_path(answer), REMOTE_ADDR=address, **extra, **headers, **kwargs)


def full(answer, **changes):
    """A PUT body: the metadata as registered, with changes (RFC 7592 §2.2 replaces the whole)."""
    body = {key: answer[key] for key in ("client_id", "client_name", "redirect_uris", "scope")}
    body |= {"token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]}
    return body | changes


def test_the_registration_answer_carries_the_token_and_uri_stored_as_a_digest(registered, settings):
    client = OAuthClient.objects.get(client_id=registered["client_id"])
    token = registered["registration_access_token"]
    assert len(token) >= 43
    assert registered["registration_client_uri"] == f"{settings.OAUTH_ISSUER}{ISSUER_PATH}{client.client_id}"
    assert client.registration_token_digest == digest(token)
    assert token not in json.dumps(list(ClientAuditEvent.objects.values_list("detail", flat=True)))


def test_the_client_reads_its_registration(api, registered):
    response = call(api, "get", registered)
    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    document = response.json()
    assert document["client_id"] == registered["client_id"]
    assert document["client_name"] == "Claude Desktop"
    assert document["registration_client_uri"] == registered["registration_client_uri"]
    assert "registration_access_token" not in document  # not rotated on a read


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_no_wrong_or_another_clients_token_is_401_alike(api, registered, method):
    other = register(api, agent_metadata(client_name="Other")).json()
    body = full(registered) if method == "put" else None
    for token in ("", "wrong-token", other["registration_access_token"], "é" * 10):
        response = call(api, method, registered, token=token or "", body=body)
        assert response.status_code == 401, (token, response.content)
        assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'
        assert response.json()["error"] == "invalid_token"
    unknown = dict(registered, registration_client_uri=registered["registration_client_uri"] + "x")
    assert call(api, method, unknown, body=body).status_code == 401
    assert OAuthClient.objects.get(client_id=registered["client_id"]).deleted_at is None


def test_a_rejected_clients_token_no_longer_works(api, registered, reviewer):
    client = OAuthClient.objects.get(client_id=registered["client_id"])
    services.client_reject(client=client, actor=reviewer, reason="Spam.")
    assert call(api, "get", registered).status_code == 401
    # A rejected agent cannot send itself back to the unverified tier by updating.
    assert call(api, "put", registered, body=full(registered, client_name="Again")).status_code == 401
    assert OAuthClient.objects.get(pk=client.pk).status == ClientStatus.REJECTED


def test_an_update_replaces_the_metadata_and_rotates_the_token(api, registered):
    response = call(api, "put", registered, body=full(registered, client_name="Claude Desktop 2", software_version="2"))
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["client_name"] == "Claude Desktop 2" and answer["software_version"] == "2"
    assert answer["registration_access_token"] != registered["registration_access_token"]
    assert call(api, "get", registered).status_code == 401  # the old token is gone
    assert call(api, "get", answer).status_code == 200
    client = OAuthClient.objects.get(client_id=registered["client_id"])
    assert client.name == "Claude Desktop 2" and client.status == ClientStatus.UNVERIFIED
    assert ClientAuditEvent.objects.filter(client=client, action=AuditAction.CLIENT_UPDATED).exists()


@pytest.mark.parametrize(
    "changes, error",
    [
        ({"client_id": "someone-else"}, "invalid_client_metadata"),
        ({"redirect_uris": ["http://example.com/callback"]}, "invalid_redirect_uri"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        ({"scope": "NOT_A_SCOPE"}, "invalid_client_metadata"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "invalid_client_metadata"),
        ({"client_secret": "not-its-secret"}, "invalid_client_metadata"),
        ({"client_name": "two\nlines"}, "invalid_client_metadata"),
    ],
)
def test_an_update_breaking_the_registrations_rules_is_refused(api, registered, changes, error):
    response = call(api, "put", registered, body=full(registered, **changes))
    assert response.status_code == 400, response.content
    assert response.json()["error"] == error
    client = OAuthClient.objects.get(client_id=registered["client_id"])
    assert client.name == "Claude Desktop" and client.registration_token_digest == digest(
        registered["registration_access_token"]
    )


@pytest.mark.parametrize("body", [b"[]", b"not json", b"{" * 5000])
def test_an_update_that_is_not_a_json_object_is_refused(api, registered, body):
    response = api.put(
        uri_path(registered),
        data=body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {registered['registration_access_token']}",
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"
    form = api.put(
        uri_path(registered),
        data="a=b",
        content_type="application/x-www-form-urlencoded",
        HTTP_AUTHORIZATION=f"Bearer {registered['registration_access_token']}",
    )
    assert form.status_code == 400


def test_an_unverified_clients_update_stays_under_the_ceiling(api, browser, registered):
    answer = call(api, "put", registered, body=full(registered, scope="PROFILE_READ BOOKING_READ BOOKING_WRITE")).json()
    client = OAuthClient.objects.get(client_id=answer["client_id"])
    assert client.status == ClientStatus.UNVERIFIED
    from tests.oauthflows.helpers import authorize_url, pkce_pair

    page = browser.get(authorize_url(client, scope="BOOKING_WRITE", code_challenge=pkce_pair()[1]))
    assert page.status_code == 400 and b"This application is unverified" in page.content


@pytest.mark.parametrize(
    "changes, back_to_review",
    [
        ({"client_name": "Renamed"}, True),
        ({"redirect_uris": [REDIRECT, "http://127.0.0.1:40000/cb"]}, True),
        ({"scope": "PROFILE_READ BOOKING_READ BOOKING_WRITE ORG_BOOKING_READ"}, True),
        ({"logo_uri": "https://agent.example/logo.png"}, True),
        ({"software_version": "3"}, False),
        ({"scope": "PROFILE_READ"}, False),  # narrower
    ],
)
def test_an_approved_client_changing_what_review_covers_goes_back_to_review(
    api, registered, reviewer, changes, back_to_review
):
    client = OAuthClient.objects.get(client_id=registered["client_id"])
    services.client_approve(client=client, actor=reviewer)
    response = call(api, "put", registered, body=full(registered, **changes))
    assert response.status_code == 200, response.content
    client.refresh_from_db()
    resubmitted = ClientAuditEvent.objects.filter(client=client, action=AuditAction.CLIENT_RESUBMITTED).exists()
    assert resubmitted is back_to_review
    # Back to the tier it registered into: usable within the ceiling until approved again.
    assert client.status == (ClientStatus.UNVERIFIED if back_to_review else ClientStatus.APPROVED)


def test_delete_ends_the_client_and_its_grants(api, browser, registered):
    client = OAuthClient.objects.get(client_id=registered["client_id"])
    tokens = tokens_for(browser, api, client)
    assert AccessToken.objects.filter(application=client).exists()
    response = call(api, "delete", registered)
    assert response.status_code == 204
    client.refresh_from_db()
    assert client.deleted_at is not None and client.status == ClientStatus.REJECTED
    assert not AccessToken.objects.filter(application=client).exists()
    assert call(api, "get", registered).status_code == 401
    assert call(api, "delete", registered).status_code == 401
    assert tokens["access_token"]


def test_configuration_calls_are_rate_limited(api, registered, settings):
    caches[settings.RATELIMIT_CACHE].clear()
    settings.RATELIMITS = {
        **settings.RATELIMITS,
        "registration_management_per_address": (4, 3600),
        "registration_management_failures_per_client": (2, 60),
    }
    # Wrong tokens for this client: after two, a third is refused with 429 ...
    for _ in range(2):
        assert call(api, "get", registered, token="wrong", address="198.51.100.1").status_code == 401
    assert call(api, "get", registered, token="wrong", address="198.51.100.2").status_code == 429
    # ... while the right token still works (judged after the view: strangers cannot lock it out).
    assert call(api, "get", registered, address="198.51.100.3").status_code == 200
    # Per address, every call counts.
    for _ in range(2):
        assert call(api, "get", registered, address="198.51.100.1").status_code == 200
    refused = call(api, "get", registered, address="198.51.100.1")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    caches[settings.RATELIMIT_CACHE].clear()


def test_cors_for_the_clients_own_origin_only(api, registered):
    own, other = "http://127.0.0.1:33418", "https://evil.example"
    assert call(api, "get", registered, HTTP_ORIGIN=own)["Access-Control-Allow-Origin"] == own
    assert "Access-Control-Allow-Origin" not in call(api, "get", registered, HTTP_ORIGIN=other)
    preflight = api.options(uri_path(registered), HTTP_ORIGIN=own, HTTP_ACCESS_CONTROL_REQUEST_METHOD="PUT")
    assert preflight["Access-Control-Allow-Origin"] == own
    assert "PUT" in preflight["Access-Control-Allow-Methods"]
    refused = api.options(uri_path(registered), HTTP_ORIGIN=other, HTTP_ACCESS_CONTROL_REQUEST_METHOD="PUT")
    assert "Access-Control-Allow-Origin" not in refused
