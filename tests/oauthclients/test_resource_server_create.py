"""Resource servers: made by administrators only (service, command, admin), never shown to developers."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client

from oauthclients import services
from oauthclients.exceptions import LastSecretError, SecretLimitReached
from oauthclients.models import AuditAction, ClientKind, ClientStatus, OAuthClient
from tests.factories import PASSWORD, make_resource_server


def run(*args) -> dict:
    from io import StringIO

    out = StringIO()
    call_command("oauthclient", *args, stdout=out)
    return json.loads(out.getvalue())


def test_it_is_approved_at_once_with_a_secret_and_no_grants(reviewer):
    created = make_resource_server(reviewer)
    client = created.client
    assert client.client_type == ClientKind.RESOURCE_SERVER and client.status == ClientStatus.APPROVED
    assert (client.scopes, client.redirect_uris, client.is_legacy) == ("", "", False)
    assert created.secret.plaintext.startswith("cs_") and created.secret.secret.matches(created.secret.plaintext)
    assert not client.allows_grant_type(OAuthClient.GRANT_AUTHORIZATION_CODE)
    actions = set(client.audit_events.values_list("action", flat=True))
    assert actions == {AuditAction.CLIENT_CREATED, AuditAction.CLIENT_APPROVED, AuditAction.SECRET_CREATED}


def test_it_needs_a_name(reviewer):
    with pytest.raises(ValidationError) as caught:
        services.resource_server_create(owner=reviewer, name="  ", actor=reviewer)
    assert "name" in caught.value.message_dict


def test_the_app_service_refuses_to_make_one(owner):
    with pytest.raises(ValidationError) as caught:
        services.client_create(
            owner=owner,
            name="Sneaky",
            website_url="https://x.example.com",
            kind=ClientKind.RESOURCE_SERVER,
            redirect_uris=["https://x.example.com/cb"],
            scopes=["PROFILE_READ"],
        )
    assert "client_type" in caught.value.message_dict
    assert not OAuthClient.objects.exists()


def test_the_database_refuses_a_resource_server_with_scopes(reviewer):
    from django.db import IntegrityError, transaction

    client = make_resource_server(reviewer).client
    with pytest.raises(IntegrityError), transaction.atomic():
        OAuthClient.objects.filter(pk=client.pk).update(scopes="PROFILE_READ")


def test_its_secrets_follow_the_two_secret_rules(reviewer):
    created = make_resource_server(reviewer)
    client = created.client
    second = services.client_secret_create(client=client, actor=reviewer)
    with pytest.raises(SecretLimitReached):
        services.client_secret_create(client=client, actor=reviewer)
    services.client_secret_revoke(client=client, secret_id=created.secret.secret.pk, actor=reviewer)
    with pytest.raises(LastSecretError):
        services.client_secret_revoke(client=client, secret_id=second.secret.pk, actor=reviewer)


def test_the_command_creates_one_and_prints_its_secret_once(reviewer):
    result = run("create", "--resource-server", "--owner", reviewer.username, "--name", "Bookings API")
    assert result["kind"] == "resource_server" and result["status"] == "approved"
    client = OAuthClient.objects.get(client_id=result["client_id"])
    assert client.secrets.get().matches(result["client_secret"])
    shown = run("show", result["client_id"])
    assert result["client_secret"] not in json.dumps(shown)


@pytest.mark.parametrize(
    "extra, named",
    [
        (["--scope", "PROFILE_READ"], "--scope"),
        (["--redirect-uri", "https://x.example.com/cb"], "--redirect-uri"),
        (["--public"], "--public"),
        (["--legacy"], "--legacy"),
    ],
)
def test_the_command_refuses_app_options_for_a_resource_server(reviewer, extra, named):
    with pytest.raises(CommandError, match=named):
        run("create", "--resource-server", "--owner", reviewer.username, "--name", "API", *extra)
    assert not OAuthClient.objects.exists()


def test_the_command_still_requires_a_redirect_uri_for_an_app(owner):
    with pytest.raises(CommandError, match="--redirect-uri is required"):
        run("create", "--owner", owner.username, "--name", "App", "--scope", "PROFILE_READ")


def test_the_command_rotates_its_secrets_and_rejects_it(reviewer):
    result = run("create", "--resource-server", "--owner", reviewer.username, "--name", "API")
    added = run("add-secret", result["client_id"])
    run("revoke-secret", result["client_id"], str(result["secret_id"]))
    client = OAuthClient.objects.get(client_id=result["client_id"])
    assert [s.matches(added["client_secret"]) for s in client.secrets.filter(revoked_at__isnull=True)] == [True]
    assert run("reject", result["client_id"], "--reason", "Retired")["status"] == "rejected"


def _admin(reviewer) -> Client:
    browser = Client()
    assert browser.login(username=reviewer.username, password=PASSWORD)
    return browser


def test_the_admin_creates_one_and_filters_by_kind(reviewer, owner):
    from tests.factories import make_client

    make_client(owner, name="An app")
    admin = _admin(reviewer)
    response = admin.post(
        "/admin/oauthclients/oauthclient/add/",
        {"owner": reviewer.pk, "name": "Bookings API", "client_type": "resource_server"},
    )
    assert response.status_code == 200, response.content[:2000]
    server = OAuthClient.objects.get(client_type=ClientKind.RESOURCE_SERVER)
    assert server.status == ClientStatus.APPROVED and server.name == "Bookings API"
    # The one-time page shows the secret that the stored digest matches.
    page = response.content.decode()
    secret = next(word for word in page.replace("<", " ").replace(">", " ").split() if word.startswith("cs_"))
    assert server.secrets.get().matches(secret)

    listing = admin.get("/admin/oauthclients/oauthclient/?client_type__exact=resource_server").content.decode()
    assert "Bookings API" in listing and "An app" not in listing


def test_developers_never_see_one(owner):
    created = make_resource_server(owner)
    browser = Client()
    assert browser.login(username=owner.username, password=PASSWORD)
    assert created.client.name not in browser.get("/settings/developer/").content.decode()
    assert browser.get(f"/settings/developer/clients/{created.client.client_id}/").status_code == 404


def test_the_admin_gives_a_resource_server_its_resource_uri_and_refuses_a_bad_one(reviewer, owner):
    admin = _admin(reviewer)
    add = "/admin/oauthclients/oauthclient/add/"
    fields = {"owner": reviewer.pk, "name": "Bookings API", "client_type": "resource_server"}
    refused = admin.post(add, fields | {"resource_uri": "http://bookings.example.com/api"})
    assert refused.status_code == 200 and "must use https" in refused.content.decode()
    assert not OAuthClient.objects.filter(client_type=ClientKind.RESOURCE_SERVER).exists()

    app = admin.post(
        add,
        {
            "owner": reviewer.pk,
            "name": "An app",
            "client_type": "confidential",
            "redirect_uris": "https://app.example.com/cb",
            "scopes": ["PROFILE_READ"],
            "purpose": "x",
            "resource_uri": "https://bookings.example.com/api",
        },
    )
    assert "Only a resource server has a resource URI." in app.content.decode()
    assert not OAuthClient.objects.exists()

    admin.post(add, fields | {"resource_uri": "https://bookings.example.com/api"})
    assert OAuthClient.objects.get().resource_uri == "https://bookings.example.com/api"
