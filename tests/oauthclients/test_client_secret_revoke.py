import pytest
from django.utils import timezone

from oauthclients import services
from oauthclients.exceptions import LastSecretError, SecretNotFound
from oauthclients.models import AuditAction, ClientSecret
from tests.factories import make_client
from tests.oauthclients.service_helpers import (
    AuditWriteFailed,
    active_secrets,
    add_second_secret,
    assert_audited,
    audit_actions,
    audit_events,
    break_audit,
    make_public,
)


@pytest.fixture
def two_secrets(client_obj, owner):
    return add_second_secret(client_obj, owner)


def test_it_revokes_one_of_two_secrets_at_once(two_secrets, client_obj, owner):
    old, new = two_secrets
    since = timezone.now()
    returned = services.client_secret_revoke(client=client_obj, secret_id=old.pk, actor=owner)
    old.refresh_from_db()
    assert since <= old.revoked_at <= timezone.now()
    assert returned.pk == old.pk and not returned.is_active
    assert active_secrets(client_obj) == [new]
    event = audit_events(client_obj)[-1]
    assert_audited(event, client=client_obj, actor=owner, action=AuditAction.SECRET_REVOKED, since=since)
    assert event.detail == {"secret_id": old.pk, "hint": old.hint}


def test_it_refuses_to_revoke_the_last_active_secret(client_obj, owner):
    (only,) = active_secrets(client_obj)
    before = audit_actions(client_obj)
    with pytest.raises(LastSecretError, match="last active secret"):
        services.client_secret_revoke(client=client_obj, secret_id=only.pk, actor=owner)
    assert active_secrets(client_obj) == [only]
    assert audit_actions(client_obj) == before


def test_the_survivor_of_a_rotation_cannot_be_revoked(two_secrets, client_obj, owner):
    old, new = two_secrets
    services.client_secret_revoke(client=client_obj, secret_id=old.pk, actor=owner)
    with pytest.raises(LastSecretError):
        services.client_secret_revoke(client=client_obj, secret_id=new.pk, actor=owner)
    assert active_secrets(client_obj) == [new]


def test_it_refuses_an_already_revoked_secret(two_secrets, client_obj, owner):
    old, _ = two_secrets
    services.client_secret_revoke(client=client_obj, secret_id=old.pk, actor=owner)
    services.client_secret_create(client=client_obj, actor=owner)
    with pytest.raises(SecretNotFound):
        services.client_secret_revoke(client=client_obj, secret_id=old.pk, actor=owner)


def test_it_refuses_another_clients_secret(two_secrets, client_obj, owner, other_developer):
    theirs = make_client(other_developer)
    services.client_secret_create(client=theirs.client, actor=other_developer)
    with pytest.raises(SecretNotFound):
        services.client_secret_revoke(client=client_obj, secret_id=theirs.secret.secret.pk, actor=owner)
    assert ClientSecret.objects.get(pk=theirs.secret.secret.pk).is_active


@pytest.mark.parametrize("secret_id", ["abc", None, 0])
def test_it_refuses_a_malformed_or_unknown_id(two_secrets, client_obj, owner, secret_id):
    with pytest.raises(SecretNotFound):
        services.client_secret_revoke(client=client_obj, secret_id=secret_id, actor=owner)
    assert len(active_secrets(client_obj)) == 2


def test_a_public_client_has_nothing_to_revoke(owner):
    public = make_public(owner)
    with pytest.raises(SecretNotFound):
        services.client_secret_revoke(client=public, secret_id=1, actor=owner)


def test_the_secret_stays_active_when_the_audit_write_fails(two_secrets, client_obj, owner, monkeypatch):
    break_audit(monkeypatch)
    with pytest.raises(AuditWriteFailed):
        services.client_secret_revoke(client=client_obj, secret_id=two_secrets[0].pk, actor=owner)
    assert active_secrets(client_obj) == list(two_secrets)
