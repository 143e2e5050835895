import hashlib
import re

import pytest
from django.utils import timezone

from oauthclients import services
from oauthclients.exceptions import ClientKindError, SecretLimitReached
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
    database_text,
    make_public,
)


@pytest.fixture
def two_secrets(client_obj, owner):
    return add_second_secret(client_obj, owner)


@pytest.fixture(params=["first, from client_create", "second, from client_secret_create"])
def issued(request, owner):
    """A secret just issued, through either door that issues one."""
    created = make_client(owner)
    if request.param.startswith("first"):
        return created.secret
    return services.client_secret_create(client=created.client, actor=owner)


def test_it_adds_a_second_secret_while_one_is_active(client_obj, owner):
    first = active_secrets(client_obj)
    issued = services.client_secret_create(client=client_obj, actor=owner)
    assert active_secrets(client_obj) == [*first, issued.secret]


def test_it_refuses_a_third_active_secret(two_secrets, client_obj, owner):
    before = audit_actions(client_obj)
    with pytest.raises(SecretLimitReached, match="already has 2 active secrets"):
        services.client_secret_create(client=client_obj, actor=owner)
    assert active_secrets(client_obj) == list(two_secrets)
    assert audit_actions(client_obj) == before


def test_a_revoked_secret_frees_its_place(two_secrets, client_obj, owner):
    services.client_secret_revoke(client=client_obj, secret_id=two_secrets[0].pk, actor=owner)
    issued = services.client_secret_create(client=client_obj, actor=owner)
    assert active_secrets(client_obj) == [two_secrets[1], issued.secret]


def test_a_public_client_has_no_secrets(owner):
    public = make_public(owner)
    with pytest.raises(ClientKindError):
        services.client_secret_create(client=public, actor=owner)
    assert not public.secrets.exists()


def test_the_secret_has_at_least_256_random_bits(issued):
    prefix, random_part = issued.plaintext[:3], issued.plaintext[3:]
    assert prefix == services.SECRET_PREFIX
    # token_urlsafe(32): 32 random bytes = 256 bits = 43 url-safe base64 characters.
    assert len(random_part) >= 43
    assert re.fullmatch(r"[A-Za-z0-9_-]+", random_part)


def test_every_secret_is_different(client_obj, owner):
    issued = services.client_secret_create(client=client_obj, actor=owner)
    other = make_client(owner).secret
    assert len({issued.plaintext, other.plaintext}) == 2
    assert len({issued.secret.digest, other.secret.digest}) == 2


def test_it_stores_the_sha256_digest_of_the_secret(issued):
    row = ClientSecret.objects.get(pk=issued.secret.pk)
    assert row.digest == hashlib.sha256(issued.plaintext.encode()).hexdigest()
    assert row.matches(issued.plaintext)
    assert not row.matches(issued.plaintext + "x")


def test_the_hint_is_a_short_prefix_not_the_secret(issued):
    hint = ClientSecret.objects.get(pk=issued.secret.pk).hint
    assert issued.plaintext.startswith(hint)
    assert len(services.SECRET_PREFIX) < len(hint) <= 8


def test_the_plaintext_is_nowhere_in_the_database(issued):
    text = database_text()
    # The scan does read the secret's row and its audit event...
    assert issued.secret.digest in text and AuditAction.SECRET_CREATED.value in text
    # ...and finds neither the secret nor its random part.
    assert issued.plaintext not in text
    assert issued.plaintext[len(services.SECRET_PREFIX) :] not in text


def test_the_plaintext_is_carried_only_by_the_issued_secret(issued):
    assert issued.plaintext not in repr(vars(issued.secret))
    # A logged or traceback-printed IssuedSecret must not show it either (STYLE §8).
    assert issued.plaintext not in repr(issued)
    assert issued.plaintext not in str(issued.secret)


def test_it_records_times_and_who_made_it(client_obj, owner):
    since = timezone.now()
    issued = services.client_secret_create(client=client_obj, actor=owner)
    row = ClientSecret.objects.get(pk=issued.secret.pk)
    assert since <= row.created <= timezone.now()
    assert (row.created_by, row.last_used_at, row.revoked_at) == (owner, None, None)
    event = audit_events(client_obj)[-1]
    assert_audited(event, client=client_obj, actor=owner, action=AuditAction.SECRET_CREATED, since=since)
    assert event.detail == {"secret_id": row.pk, "hint": row.hint}


def test_no_secret_is_made_when_the_audit_write_fails(client_obj, owner, monkeypatch):
    first = active_secrets(client_obj)
    break_audit(monkeypatch)
    with pytest.raises(AuditWriteFailed):
        services.client_secret_create(client=client_obj, actor=owner)
    assert list(client_obj.secrets.all()) == first
