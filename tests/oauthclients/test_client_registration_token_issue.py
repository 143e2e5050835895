"""A self-registered (RFC 7591) client that registered before registration access tokens existed has
none, and could never read, update or delete its registration (RFC 7592). An administrator issues it
one, with `manage.py oauthclient issue-registration-token` or the admin's action: shown once, stored
as a digest, audited; any earlier token stops working (docs/deploying.md, "Upgrades")."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from oauthclients import services
from oauthclients.exceptions import InvalidTransition
from oauthclients.models import AuditAction, ClientAuditEvent, OAuthClient, digest
from tests.factories import make_client
from tests.oauthclients.test_admin import messages_of, run_action
from tests.oauthflows.test_registration import agent_metadata, register
from tests.security.test_storage import dumpdata_text

TOKEN_IN_PAGE = re.compile(r'class="one-time-secret">([A-Za-z0-9_-]{43,})<')


def _path(uri: str) -> str:
    return "/" + uri.split("://", 1)[1].split("/", 1)[1]


def reads_its_registration(client: OAuthClient, token: str) -> int:
    """The client's RFC 7592 read with `token`: its status code."""
    return Client().get(_path(client.registration_client_uri), HTTP_AUTHORIZATION=f"Bearer {token}").status_code


@pytest.fixture
def registered_before(db) -> OAuthClient:
    """A client that registered itself when the server issued no registration access token."""
    answer = register(Client(enforce_csrf_checks=True), agent_metadata())
    assert answer.status_code == 201, answer.content
    client = OAuthClient.objects.get(client_id=answer.json()["client_id"])
    OAuthClient.objects.filter(pk=client.pk).update(registration_token_digest="")  # as the upgrade left it
    client.refresh_from_db()
    return client


def issue(client_id: str, *actor) -> dict:
    out = StringIO()
    call_command("oauthclient", *actor, "issue-registration-token", client_id, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def shown(client_id: str) -> dict:
    out = StringIO()
    call_command("oauthclient", "show", client_id, stdout=out)
    return json.loads(out.getvalue())


def test_the_command_issues_a_token_the_client_manages_its_registration_with(registered_before, reviewer):
    before = shown(registered_before.client_id)
    assert before["registration_source"] == "dcr" and before["registration_token_issued"] is False
    issued = issue(registered_before.client_id, "--actor", reviewer.username)
    token = issued["registration_access_token"]
    assert issued["replaced"] is False and len(token) >= 43
    assert issued["registration_client_uri"].endswith(f"/v2/auth/oauth2/register/{registered_before.client_id}")
    assert reads_its_registration(registered_before, token) == 200
    registered_before.refresh_from_db()
    assert registered_before.registration_token_digest == digest(token)
    event = ClientAuditEvent.objects.get(client=registered_before, action=AuditAction.REGISTRATION_TOKEN_ISSUED)
    assert event.actor == reviewer and event.detail == {"replaced": False}
    assert event.sentence() == f"{reviewer.username} issued a registration access token."
    # Shown once: stored as a digest, in no audit row, not in `show`.
    assert token not in dumpdata_text()
    after = shown(registered_before.client_id)
    assert after["registration_token_issued"] is True and token not in json.dumps(after)


def test_a_new_token_replaces_the_one_the_client_holds(registered_before):
    first = issue(registered_before.client_id)["registration_access_token"]
    second = issue(registered_before.client_id)
    assert second["replaced"] is True
    assert reads_its_registration(registered_before, first) == 401
    assert reads_its_registration(registered_before, second["registration_access_token"]) == 200
    event = ClientAuditEvent.objects.filter(action=AuditAction.REGISTRATION_TOKEN_ISSUED).first()
    assert event.sentence() == "The system issued a registration access token; the previous one no longer works."


def test_without_one_the_client_cannot_manage_its_registration(registered_before):
    # What the upgrade leaves: no token works, not even an empty one.
    assert reads_its_registration(registered_before, "") == 401
    assert reads_its_registration(registered_before, "anything-at-all-0123456789abcdefghijklmnopq") == 401


def test_only_a_client_that_registered_itself_and_is_not_rejected_gets_one(registered_before, owner, reviewer):
    manual = make_client(owner, approve=True).client
    with pytest.raises(CommandError, match="Only a client that registered itself"):
        issue(manual.client_id)
    OAuthClient.objects.filter(pk=registered_before.pk).update(registration_source=OAuthClient.RegistrationSource.CIMD)
    with pytest.raises(InvalidTransition):
        services.client_registration_token_issue(client=registered_before, actor=reviewer)
    OAuthClient.objects.filter(pk=registered_before.pk).update(registration_source=OAuthClient.RegistrationSource.DCR)
    services.client_reject(client=registered_before, actor=reviewer, reason="Not ours.")
    with pytest.raises(CommandError, match="rejected or deleted"):
        issue(registered_before.client_id)
    with pytest.raises(CommandError, match="Unknown client"):
        issue("no-such-client")
    assert not ClientAuditEvent.objects.filter(action=AuditAction.REGISTRATION_TOKEN_ISSUED).exists()
    assert OAuthClient.objects.get(pk=registered_before.pk).registration_token_digest == ""


def test_the_admin_action_shows_each_token_once_and_audits_it(staff, reviewer, registered_before, owner):
    manual = make_client(owner, approve=True).client
    response = run_action(staff, "issue_registration_tokens", [registered_before, manual])
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    (token,) = TOKEN_IN_PAGE.findall(response.content.decode())
    assert registered_before.registration_client_uri in response.content.decode()
    assert reads_its_registration(registered_before, token) == 200
    said = messages_of(response)
    assert any("Only a client that registered itself" in message for message in said)  # the manual client
    assert "Issued 1 registration access token." in said
    assert all(token not in message for message in said) and token not in str(response.cookies)
    event = ClientAuditEvent.objects.get(action=AuditAction.REGISTRATION_TOKEN_ISSUED)
    assert event.client == registered_before and event.actor == reviewer
    later = staff.get(reverse("admin:oauthclients_oauthclient_change", args=[registered_before.pk]))
    assert token not in later.content.decode()
