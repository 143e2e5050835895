"""services.client_document_refresh: a client ID metadata document fetched again changes the client
under its row lock, and says so in the audit trail (the issue's "Also": it wrote no audit row)."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from oauthclients import services
from oauthclients.models import AuditAction, ClientAuditEvent, OAuthClient

pytestmark = pytest.mark.django_db

DOCUMENT = "https://agent.example/client.json"


@pytest.fixture
def document_client():
    return services.client_self_register(
        name="Agent",
        kind="public",
        redirect_uris=["https://agent.example/cb"],
        scopes=["PROFILE_READ"],
        source=OAuthClient.RegistrationSource.CIMD,
        client_id=DOCUMENT,
    ).client


def refresh(client, **changes):
    fields = {
        "name": "Agent",
        "kind": "public",
        "redirect_uris": ["https://agent.example/cb"],
        "scopes": ["PROFILE_READ"],
    }
    return services.client_document_refresh(
        client=client, expires=timezone.now() + timedelta(hours=1), **{**fields, **changes}
    )


def updates(client):
    return list(ClientAuditEvent.objects.filter(client=client, action=AuditAction.CLIENT_UPDATED))


def test_a_changed_document_is_audited_with_what_changed(document_client):
    refresh(document_client, name="Agent Pro", redirect_uris=["https://agent.example/cb2"])
    (event,) = updates(document_client)
    assert event.actor is None
    assert event.detail["changed"] == ["name", "redirect_uris"]
    assert event.detail["source"] == "cimd"
    assert event.sentence() == "The system edited name, redirect uris."
    assert OAuthClient.objects.get(pk=document_client.pk).name == "Agent Pro"


def test_an_unchanged_document_writes_no_audit_row(document_client):
    refresh(document_client)
    assert updates(document_client) == []


def test_a_renamed_document_gets_its_new_skeleton_and_the_name_rule(document_client):
    refresh(document_client, name="G00gle Calendar")
    assert OAuthClient.objects.get(pk=document_client.pk).name_skeleton == "googlecalendar"
    with pytest.raises(ValidationError, match="U\\+3164"):
        refresh(document_client, name="Google\u3164Calendar")
