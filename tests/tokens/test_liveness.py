"""tokens.liveness: whether a token is alive (client rejected, user inactive, revoked, expired),
for access tokens, refresh tokens and codes, and its queryset twin `alive_q` on the same rows."""

import secrets
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from oauth2_provider.models import set_token_value
from oauth2_provider.settings import oauth2_settings

from oauthclients.models import AccessToken, ClientStatus, Grant, OAuthClient, RefreshToken, digest
from tests.factories import make_client, make_user
from tokens.liveness import Ended, alive_q, token_alive, token_ended

LATER, EARLIER = timedelta(minutes=5), -timedelta(seconds=1)


@pytest.fixture
def client_and_user_states(db, owner):
    approved = make_client(owner, approve=True, name="Approved").client
    pending = make_client(owner, name="Pending").client  # sent back to review: keeps its tokens
    rejected = make_client(owner, approve=True, name="Rejected").client
    active, inactive = make_user("active"), make_user("inactive")
    return approved, pending, rejected, active, inactive


def _access(user, client, delta):
    token = AccessToken(user=user, application=client, scope="", expires=timezone.now() + delta)
    set_token_value(token, secrets.token_urlsafe(32))
    token.save()
    return token


def _refresh(user, client, delta, *, revoked=False, orphan=False):
    access = _access(user, client, delta)
    token = RefreshToken(user=user, application=client, access_token=None if orphan else access)
    token.token_family, token.revoked = uuid.uuid4(), timezone.now() if revoked else None
    set_token_value(token, secrets.token_urlsafe(32))
    token.save()
    return token


def _code(user, client, delta, *, used=False):
    return Grant.objects.create(
        user=user,
        application=client,
        code=digest(secrets.token_urlsafe(16)),
        expires=timezone.now() + delta,
        redirect_uri="https://calendar-sync.example.com/callback",
        used_at=timezone.now() if used else None,
    )


def _cases(client_and_user_states):
    approved, pending, rejected, active, inactive = client_and_user_states
    lifetime = timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)
    return {
        AccessToken: {
            None: [_access(active, approved, LATER), _access(active, pending, LATER)],
            Ended.EXPIRED: [_access(active, approved, EARLIER)],
            Ended.CLIENT_REJECTED: [_access(active, rejected, LATER)],
            Ended.USER_INACTIVE: [_access(inactive, approved, LATER)],
        },
        RefreshToken: {
            None: [_refresh(active, approved, LATER), _refresh(active, approved, -timedelta(days=1))],
            Ended.EXPIRED: [_refresh(active, approved, -lifetime - timedelta(seconds=1))],
            Ended.REVOKED: [
                _refresh(active, approved, LATER, revoked=True),
                _refresh(active, approved, LATER, orphan=True),
            ],
            Ended.CLIENT_REJECTED: [_refresh(active, rejected, LATER)],
            Ended.USER_INACTIVE: [_refresh(inactive, approved, LATER)],
        },
        Grant: {
            None: [_code(active, approved, LATER)],
            Ended.EXPIRED: [_code(active, approved, EARLIER)],
            Ended.REVOKED: [_code(active, approved, LATER, used=True)],
            Ended.CLIENT_REJECTED: [_code(active, rejected, LATER)],
            Ended.USER_INACTIVE: [_code(inactive, approved, LATER)],
        },
    }


def _end(client_and_user_states):
    approved, pending, rejected, active, inactive = client_and_user_states
    OAuthClient.objects.filter(pk=rejected.pk).update(status=ClientStatus.REJECTED)
    OAuthClient.objects.filter(pk=pending.pk).update(status=ClientStatus.PENDING)
    get_user_model().objects.filter(pk=inactive.pk).update(is_active=False)


@pytest.mark.parametrize("model", [AccessToken, RefreshToken, Grant])
def test_each_reason_a_token_ends_and_the_querysets_twin_agrees(client_and_user_states, model):
    cases = _cases(client_and_user_states)[model]
    _end(client_and_user_states)
    now = timezone.now()
    for reason, tokens in cases.items():
        for token in tokens:
            fresh = model.objects.get(pk=token.pk)
            assert token_ended(fresh, now=now) is reason, (model.__name__, reason)
            assert token_alive(fresh, now=now) is (reason is None)
    everyone = {token.pk for tokens in cases.values() for token in tokens}
    live = set(model.objects.filter(alive_q(model, now=now), pk__in=everyone).values_list("pk", flat=True))
    assert live == {token.pk for token in cases[None]}


def test_no_token_is_not_alive():
    assert token_alive(None) is False


def test_alive_q_is_for_tokens_only():
    with pytest.raises(TypeError):
        alive_q(OAuthClient)
