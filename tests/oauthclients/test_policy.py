"""oauthclients.policy.client_may_act: whether a client may act here, by review state and door,
the one place it is decided (every door asks it; tests/test_one_policy_for_clients_and_tokens.py
fails on a second copy). Where the copies it replaced disagreed, the stricter rule won: tested
here and, for ID-JAG, in tests/oauthflows/test_idjag.py."""

from types import SimpleNamespace

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.utils import timezone

from oauthclients.models import ClientKind, ClientStatus, OAuthClient
from oauthclients.policy import Door, client_may_act, client_tokens_end
from tests.factories import make_client
from tests.oauthflows.helpers import authorize_url

OWNER, OTHER = SimpleNamespace(pk=1, is_authenticated=True), SimpleNamespace(pk=2, is_authenticated=True)
WHO = {"owner": OWNER, "another person": OTHER, "anonymous": AnonymousUser(), "nobody known": None}

A, P, U, R = ClientStatus.APPROVED, ClientStatus.PENDING, ClientStatus.UNVERIFIED, ClientStatus.REJECTED
# (status, door, consent_shown) -> who may: "all", "owner", "none".
RULE = {
    (A, Door.AUTHORIZE, False): "all",
    (A, Door.BEFORE_LOGIN, False): "all",
    (A, Door.REDIRECT, False): "all",
    (A, Door.CLIENT_AUTHENTICATION, False): "all",
    (A, Door.GRANT, False): "all",
    (U, Door.AUTHORIZE, False): "all",  # within the ceiling, checked on the scopes (oauthclients.tier)
    (U, Door.BEFORE_LOGIN, False): "all",
    (U, Door.REDIRECT, False): "none",  # not before its consent page was shown
    (U, Door.REDIRECT, True): "all",
    (U, Door.CLIENT_AUTHENTICATION, False): "all",
    (U, Door.GRANT, False): "all",
    (P, Door.AUTHORIZE, False): "owner",
    (P, Door.BEFORE_LOGIN, False): "all",  # asked again (AUTHORIZE) once signed in
    (P, Door.REDIRECT, False): "owner",
    (P, Door.REDIRECT, True): "owner",
    (P, Door.CLIENT_AUTHENTICATION, False): "all",  # what it redeems: GRANT, its owner's only
    (P, Door.GRANT, False): "owner",
    **{(R, door, False): "none" for door in Door},
    (R, Door.REDIRECT, True): "none",
}


def _client(status, *, kind=ClientKind.CONFIDENTIAL, deleted=False) -> OAuthClient:
    return OAuthClient(
        status=status, user_id=OWNER.pk, client_type=kind, deleted_at=timezone.now() if deleted else None
    )


@pytest.mark.parametrize(("status", "door", "consent_shown"), list(RULE))
@pytest.mark.parametrize("who", list(WHO))
def test_the_rule_by_state_door_and_person(status, door, consent_shown, who):
    expected = RULE[(status, door, consent_shown)] == "all" or (
        RULE[(status, door, consent_shown)] == "owner" and who == "owner"
    )
    assert client_may_act(_client(status), WHO[who], door, consent_shown=consent_shown) is expected


def test_every_state_and_door_has_its_rule():
    assert {(status, door) for status, door, _shown in RULE} == {(s, d) for s in ClientStatus for d in Door}


@pytest.mark.parametrize("status", list(ClientStatus))
@pytest.mark.parametrize("door", list(Door))
def test_a_deleted_client_never_acts(status, door):
    assert client_may_act(_client(status, deleted=True), OWNER, door, consent_shown=True) is False


@pytest.mark.parametrize("door", list(Door))
def test_a_resource_server_acts_at_no_browsers_door(door):
    may = client_may_act(_client(A, kind=ClientKind.RESOURCE_SERVER), OWNER, door, consent_shown=True)
    assert may is (door in (Door.CLIENT_AUTHENTICATION, Door.GRANT))


def test_no_client_never_acts():
    assert not any(client_may_act(None, OWNER, door) for door in Door)


@pytest.mark.parametrize("status", list(ClientStatus))
def test_only_a_rejection_ends_the_tokens_a_client_holds(status):
    """A client sent back to review (pending) keeps its tokens; a rejected one, or none, does not."""
    assert client_tokens_end(_client(status)) is (status == R)
    assert client_tokens_end(None) is True


# --- DOT's is_usable asks the policy ---------------------------------------------------------------


@pytest.mark.parametrize("status", list(ClientStatus))
def test_is_usable_at_client_authentication_lets_any_but_a_rejected_client_authenticate(status):
    request = SimpleNamespace(pending_client_may_authenticate=True, user=None)
    assert _client(status).is_usable(request) is (status != R)


@pytest.mark.parametrize(
    ("preview", "user", "expected"), [(True, OWNER, True), (True, OTHER, False), (False, OWNER, False)]
)
def test_is_usable_at_authorization_lets_a_pending_client_through_for_its_previewing_owner(preview, user, expected):
    request = SimpleNamespace(pending_owner_preview=preview, user=user)
    assert _client(P).is_usable(request) is expected


# --- where the copies disagreed: the stricter rule ---------------------------------------------------


def test_a_deleted_pending_client_is_refused_to_its_owner_at_the_authorization_request(owner):
    """The authorization page let a pending client's owner through whether or not it was deleted
    (the redirect rule refused a deleted client): a row deleted behind the services' back, still
    pending, is now refused as the redirect rule always did."""
    client = make_client(owner).client
    OAuthClient.objects.filter(pk=client.pk).update(deleted_at=timezone.now())
    browser = Client()
    browser.force_login(owner)
    response = browser.get(authorize_url(client))
    assert response.status_code == 400
    assert "rejected" in response.content.decode()


def test_the_same_pending_client_not_deleted_still_reaches_its_owner(owner):
    client = make_client(owner).client
    browser = Client()
    browser.force_login(owner)
    assert browser.get(authorize_url(client)).status_code == 200
