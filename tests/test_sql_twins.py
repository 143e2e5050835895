"""Every hand-written statement that decides a rule (plumbing.handwritten.SQL_TWINS) against the
ORM function it mirrors, on the same rows: one parametrised test, one comparison per twin. A twin
registered without a comparison here fails; so does a twin naming a function that does not exist.

The status list triggers run on SQLite and PostgreSQL alike; the redemption and exchange
statements are PostgreSQL's (plumbing.handwritten.handwritten_alias), so their comparisons skip on
SQLite, and fail under REQUIRE_POSTGRES=1 if they cannot run."""

import importlib
import secrets
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from oauth2_provider.models import set_token_value
from oauth2_provider.settings import oauth2_settings

import oauthflows.token.exchange as exchange
import signing.statuslist  # noqa: F401  (registers its twin)
import tokens.redemption as redemption
from oauthclients import services
from oauthclients.exchangetargets import client_exchange_targets_set, exchange_target_get
from oauthclients.models import AccessToken, ClientStatus, Grant, OAuthClient, RefreshToken, digest
from oauthclients.policy import client_claims_without_owner_check
from plumbing.handwritten import SQL_TWINS, handwritten_alias
from signing.models import StatusList, StatusRevocation
from tests.factories import make_client, make_user
from tokens.liveness import Ended, token_alive, token_ended

COMPARISONS = {}


def compares(twin: str):
    def register(function):
        COMPARISONS[twin] = function
        return function

    return register


def _pg_alias(model) -> str:
    alias = handwritten_alias(model)
    if alias is None:
        if connection.vendor == "postgresql":
            pytest.fail("the hand-written path is switched off on PostgreSQL")
        pytest.skip("a PostgreSQL statement (plumbing.handwritten.handwritten_alias)")
    return alias


def _world(request):
    owner = make_user("twinowner")
    approved = make_client(owner, approve=True, name="Approved twin").client
    pending = make_client(owner, name="Pending twin").client
    rejected = make_client(owner, approve=True, name="Rejected twin").client
    return owner, approved, pending, rejected


def _user(name: str, *, active: bool = True):
    user = make_user(name)
    if not active:
        get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    return user


def _access(user, client, *, expires, index=None):
    token = AccessToken(user=user, application=client, scope="PROFILE_READ", expires=expires)
    if index is not None:
        StatusList.objects.get_or_create(number=3, defaults={"size": 256})
        token.status_list, token.status_index = 3, index
    raw = secrets.token_urlsafe(32)
    set_token_value(token, raw)
    token.save()
    return token, raw


# --- the status list triggers: tokens.liveness.token_ended (but expiry, which exp carries) ---------


@compares("signing.statuslist._trigger_rules")
def _triggers(request):
    owner, approved, pending, rejected = _world(request)
    now = timezone.now()
    later, earlier = now + timedelta(minutes=30), now - timedelta(minutes=1)
    alive, goes_inactive, revoked = _user("alive"), _user("inactive"), _user("revoked")
    rows = {
        "alive": _access(alive, approved, expires=later, index=0)[0],
        "expired": _access(alive, approved, expires=earlier, index=1)[0],
        "of a pending client": _access(alive, pending, expires=later, index=2)[0],
        "of a rejected client": _access(alive, rejected, expires=later, index=3)[0],
        "of an inactive user": _access(goes_inactive, approved, expires=later, index=4)[0],
        "revoked": _access(revoked, approved, expires=later, index=5)[0],
    }
    # Each ending by a bulk statement (no model signal): the database alone sees it.
    OAuthClient.objects.filter(pk=rejected.pk).update(status=ClientStatus.REJECTED)
    OAuthClient.objects.filter(pk=pending.pk).update(status=ClientStatus.PENDING)
    get_user_model().objects.filter(pk=goes_inactive.pk).update(is_active=False)
    AccessToken.objects.filter(pk=rows["revoked"].pk)._raw_delete(AccessToken.objects.db)
    for name, row in rows.items():
        current = AccessToken.objects.select_related("application", "user").filter(pk=row.pk).first()
        ended = Ended.REVOKED if current is None else token_ended(current)
        bit = StatusRevocation.objects.filter(status_list=3, index=row.status_index).exists()
        assert bit is (ended not in (None, Ended.EXPIRED)), (name, ended)


# --- a code's redemption: tokens.liveness.token_ended on the codes an approved client redeems ---------


@compares("tokens.redemption._grant_sql")
def _grant_claim(request):
    alias = _pg_alias(Grant)
    owner, approved, pending, rejected = _world(request)
    OAuthClient.objects.filter(pk=rejected.pk).update(status=ClientStatus.REJECTED)
    rejected.refresh_from_db()
    now = timezone.now()
    uri = "https://calendar-sync.example.com/callback"
    alive, inactive = _user("alive"), _user("inactive", active=False)
    cases = {
        "alive": (alive, approved, now + timedelta(minutes=5), None),
        "used": (alive, approved, now + timedelta(minutes=5), now),
        "expired": (alive, approved, now - timedelta(seconds=1), None),
        "of an inactive user": (inactive, approved, now + timedelta(minutes=5), None),
        "of a pending client (the full path)": (owner, pending, now + timedelta(minutes=5), None),
        "of a rejected client (the full path)": (alive, rejected, now + timedelta(minutes=5), None),
    }
    seen = set()
    for name, (user, client, expires, used_at) in cases.items():
        raw = secrets.token_urlsafe(32)
        grant = Grant.objects.create(
            user=user, application=client, code=digest(raw), expires=expires, redirect_uri=uri, used_at=used_at
        )
        grant = Grant.objects.select_related("application", "user").get(pk=grant.pk)
        expected = token_alive(grant, now=now) and client_claims_without_owner_check(client)
        claimed = client_claims_without_owner_check(client) and (
            redemption.grant_claim(code=raw, client_pk=client.pk, redirect_uri=uri, verifier=None, now=now) is not None
        )
        assert claimed is expected, name
        seen.add(expected)
    assert seen == {True, False} and alias


# --- a refresh token's redemption: tokens.liveness.token_ended --------------------------------------


@compares("tokens.redemption._refresh_sql")
def _refresh_claim(request):
    _pg_alias(RefreshToken)
    owner, approved, pending, rejected = _world(request)
    now = timezone.now()
    lifetime = timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)
    alive, inactive = _user("alive"), _user("inactive", active=False)

    def refresh(user, client, *, expires, revoked=None, orphan=False):
        access, _raw = _access(user, client, expires=expires)
        token = RefreshToken(
            user=user, application=client, access_token=None if orphan else access, token_family=uuid.uuid4()
        )
        token.revoked = revoked
        raw = secrets.token_urlsafe(32)
        set_token_value(token, raw)
        token.save()
        return token, raw

    cases = {
        "alive": refresh(alive, approved, expires=now + timedelta(minutes=5)),
        "its access token expired, within the lifetime": refresh(alive, approved, expires=now - timedelta(days=1)),
        "beyond the lifetime": refresh(alive, approved, expires=now - lifetime - timedelta(seconds=1)),
        "revoked": refresh(alive, approved, expires=now + timedelta(minutes=5), revoked=now),
        "without its access token": refresh(alive, approved, expires=now + timedelta(minutes=5), orphan=True),
        "of an inactive user": refresh(inactive, approved, expires=now + timedelta(minutes=5)),
        "of a pending client (the full path)": refresh(owner, pending, expires=now + timedelta(minutes=5)),
        "of a rejected client (the full path)": refresh(alive, rejected, expires=now + timedelta(minutes=5)),
    }
    OAuthClient.objects.filter(pk=rejected.pk).update(status=ClientStatus.REJECTED)
    seen = set()
    for name, (token, raw) in cases.items():
        token = RefreshToken.objects.select_related("application", "user", "access_token").get(pk=token.pk)
        client = token.application
        expected = token_alive(token, now=now) and client_claims_without_owner_check(client)
        claimed = client_claims_without_owner_check(client) and (
            redemption.refresh_token_claim(raw=raw, client_pk=client.pk, now=now, alive_after=now - lifetime)
            is not None
        )
        assert claimed is expected, name
        seen.add(expected)
    assert seen == {True, False}


# --- the exchange's lookup: oauthclients.exchangetargets.exchange_target_get, and the subject -------


@compares("oauthflows.token.exchange._lookup_sql")
def _exchange_lookup(request):
    alias = _pg_alias(AccessToken)
    owner, approved, pending, rejected = _world(request)
    reviewer = make_user("twinreviewer", staff=True)

    def server(name, uri):
        return services.resource_server_create(owner=reviewer, name=name, resource_uri=uri, actor=reviewer).client

    caller = server("Caller", "https://caller.example.com/api")
    targets = {
        "approved": server("Approved", "https://approved.example.com/api"),
        "pending": server("Pending", "https://pending.example.com/api"),
        "rejected": server("Rejected", "https://rejected.example.com/api"),
        "deleted": server("Deleted", "https://deleted.example.com/api"),
    }
    not_allowed = server("Not allowed", "https://elsewhere.example.com/api")
    client_exchange_targets_set(client=caller, resource_uris=[t.resource_uri for t in targets.values()], actor=reviewer)
    OAuthClient.objects.filter(pk=targets["pending"].pk).update(status=ClientStatus.PENDING)
    OAuthClient.objects.filter(pk=targets["rejected"].pk).update(status=ClientStatus.REJECTED)
    OAuthClient.objects.filter(pk=targets["deleted"].pk).update(deleted_at=timezone.now())
    found = []
    for target in [*targets.values(), not_allowed]:
        looked = exchange._look_up_in_one_statement(alias, caller=caller, uri=target.resource_uri, raw=None)
        orm = exchange_target_get(client=caller, resource_uri=target.resource_uri)
        assert getattr(looked.target, "pk", None) == getattr(orm, "pk", None), target.name
        found.append(orm is not None)
    assert found == [True, False, False, False, False]
    # The subject as the statement reads it is alive exactly when the ORM's row is (tokens.liveness).
    now = timezone.now()
    alive, inactive = _user("alive"), _user("inactive", active=False)
    subjects = [
        _access(alive, approved, expires=now + timedelta(minutes=5))[1],
        _access(alive, approved, expires=now - timedelta(seconds=1))[1],
        _access(inactive, approved, expires=now + timedelta(minutes=5))[1],
        _access(alive, rejected, expires=now + timedelta(minutes=5))[1],
        _access(alive, pending, expires=now + timedelta(minutes=5))[1],
        "not a token",
    ]
    OAuthClient.objects.filter(pk=rejected.pk).update(status=ClientStatus.REJECTED)
    verdicts = []
    for raw in subjects:
        looked = exchange._look_up_in_one_statement(alias, caller=caller, uri=targets["approved"].resource_uri, raw=raw)
        orm = exchange._subject_row(raw)
        assert token_alive(looked.subject, now=now) is token_alive(orm, now=now), raw
        verdicts.append(token_alive(orm, now=now))
    assert verdicts == [True, False, False, False, True, False]


# --- the tests: after every comparison is registered above ---------------------------------------


def test_each_twin_has_its_comparison_and_names_a_real_function():
    assert set(SQL_TWINS) == set(COMPARISONS)
    for twin in SQL_TWINS.values():
        module, _, name = twin.mirrors.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name)), twin


@pytest.mark.parametrize("twin", sorted(COMPARISONS))
def test_the_twin_decides_as_the_function_it_mirrors(twin, request, db):
    COMPARISONS[twin](request)
