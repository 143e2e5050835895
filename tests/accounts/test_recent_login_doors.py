"""Every admin door that grants a power (or takes it back) asks for a recent sign-in with the second
factor, as approving a client does (accounts.middleware.RECENT_LOGIN_VIEWS; SECURITY.md, "Accounts
and the login"): exchange targets (RFC 8693), ID-JAG assertion policies, accounts' staff status,
permissions and passwords, email addresses, second factors, upstream links. An administrator whose
sign-in is old, or was without the factor, is sent to confirm with it and nothing changes; once
confirmed with the authenticator app's code, allauth replays the POST and the change happens.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import pyotp
import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP
from allauth.socialaccount.models import SocialAccount
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.test import Client, RequestFactory

from accounts.middleware import RECENT_LOGIN_ADMIN_MODELS, RECENT_LOGIN_VIEWS, admin_view_names
from accounts.models import AccountAuditAction, AccountAuditEvent, AssertionPolicy
from accounts.services import identity_provider_add, identity_provider_assertions_allow
from oauthclients import services
from oauthclients.exchangetargets import client_exchange_targets_set, exchange_target_uris
from oauthclients.models import ExchangeTarget, OAuthClient
from tests.accounts.helpers import log_in, second_step
from tests.accounts.test_second_factors import _age_the_sign_in
from tests.factories import make_client

MCP = "http://127.0.0.1:8931/mcp"
BOOKINGS = "https://bookings.example.com/api"
CALENDAR = "https://calendar.example.com/api"
CONFIRM = "/accounts/2fa/reauthenticate/"
NEW_PASSWORD = "a-new-password-nobody-guesses-42"

# Registered in the admin, and writing nothing there that grants a power: each with its reason.
# A model registered later is in RECENT_LOGIN_ADMIN_MODELS, read-only, or named here. None is today:
# the record of a session, writable before (moving one to another account kept that session out of
# "Sign out everywhere"), is read-only (accounts.admin_audit; tests/accounts/test_admin_audit.py).
NO_POWER_TO_GRANT: dict[str, str] = {}


@dataclass
class World:
    reviewer: object
    end_user: object
    mcp: object
    calendar_target: object
    agent: object
    provider: object
    policy: object
    totp: object
    address: object


@pytest.fixture
def servers_and_tokens(reviewer, end_user, owner):
    servers = [
        services.resource_server_create(owner=reviewer, name=name, resource_uri=uri, actor=reviewer).client
        for name, uri in (("Scheduling MCP", MCP), ("Bookings service", BOOKINGS), ("Calendar service", CALENDAR))
    ]
    mcp = servers[0]
    client_exchange_targets_set(client=mcp, resource_uris=[CALENDAR], actor=reviewer)
    agent = make_client(owner, name="Acme Agent", scopes=["PROFILE_READ", "BOOKING_READ"], approve=True).client
    provider = identity_provider_add(
        name="ACME",
        issuer="https://sso.acme.example",
        client_id="ours",
        client_secret="s3cret",
        domains=["acme.example"],
        enforce=False,
    )
    other_agent = make_client(owner, name="Other Agent", scopes=["PROFILE_READ"], approve=True).client
    policy = identity_provider_assertions_allow(provider=provider, client=other_agent, scopes=[], actor=reviewer)
    totp = TOTP.activate(end_user, pyotp.random_base32()).instance
    address = EmailAddress.objects.create(user=end_user, email="enduser@example.com", verified=False, primary=True)
    return World(reviewer, end_user, mcp, mcp.exchange_targets.get(), agent, provider, policy, totp, address)


@dataclass
class Door:
    """One POST through one admin door, and how to tell that it changed something."""

    path: Callable[[World], str]
    data: Callable[[World], dict]
    changed: Callable[[World], bool]


def _server_pk(uri: str) -> int:
    return OAuthClient.objects.get(resource_uri=uri).pk


def _delete_selected(pk) -> dict:
    return {"action": "delete_selected", "_selected_action": [pk], "post": "yes"}


DOORS = {
    "exchange target: add": Door(
        lambda w: "/admin/oauthclients/exchangetarget/add/",
        lambda w: {"client": w.mcp.pk, "target": _server_pk(BOOKINGS)},
        lambda w: BOOKINGS in exchange_target_uris(client=w.mcp),
    ),
    "exchange target: delete": Door(
        lambda w: f"/admin/oauthclients/exchangetarget/{w.calendar_target.pk}/delete/",
        lambda w: {"post": "yes"},
        lambda w: CALENDAR not in exchange_target_uris(client=w.mcp),
    ),
    "exchange target: changelist delete": Door(
        lambda w: "/admin/oauthclients/exchangetarget/",
        lambda w: _delete_selected(w.calendar_target.pk),
        lambda w: CALENDAR not in exchange_target_uris(client=w.mcp),
    ),
    "assertion policy: add": Door(
        lambda w: "/admin/accounts/assertionpolicy/add/",
        lambda w: {"provider": w.provider.pk, "client": w.agent.pk, "scopes": '["BOOKING_READ"]'},
        lambda w: AssertionPolicy.objects.filter(client=w.agent).exists(),
    ),
    "assertion policy: change": Door(
        lambda w: f"/admin/accounts/assertionpolicy/{w.policy.pk}/change/",
        lambda w: {"provider": w.provider.pk, "client": w.policy.client_id, "scopes": '["PROFILE_READ"]'},
        lambda w: AssertionPolicy.objects.get(pk=w.policy.pk).scopes == ["PROFILE_READ"],
    ),
    "assertion policy: delete": Door(
        lambda w: f"/admin/accounts/assertionpolicy/{w.policy.pk}/delete/",
        lambda w: {"post": "yes"},
        lambda w: not AssertionPolicy.objects.filter(pk=w.policy.pk).exists(),
    ),
    "assertion policy: changelist delete": Door(
        lambda w: "/admin/accounts/assertionpolicy/",
        lambda w: _delete_selected(w.policy.pk),
        lambda w: not AssertionPolicy.objects.filter(pk=w.policy.pk).exists(),
    ),
    "user: made staff": Door(
        lambda w: f"/admin/auth/user/{w.end_user.pk}/change/",
        lambda w: {
            "username": "enduser",
            "email": "enduser@example.com",
            "is_active": "on",
            "is_staff": "on",
            "date_joined_0": "2025-01-01",
            "date_joined_1": "00:00:00",
        },
        lambda w: type(w.end_user).objects.get(pk=w.end_user.pk).is_staff,
    ),
    "user: password set": Door(
        lambda w: f"/admin/auth/user/{w.end_user.pk}/password/",
        lambda w: {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
        lambda w: type(w.end_user).objects.get(pk=w.end_user.pk).check_password(NEW_PASSWORD),
    ),
    "user: add": Door(
        lambda w: "/admin/auth/user/add/",
        lambda w: {
            "username": "newcomer",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "usable_password": "true",
        },
        lambda w: type(w.end_user).objects.filter(username="newcomer").exists(),
    ),
    "group: add with a permission": Door(
        lambda w: "/admin/auth/group/add/",
        lambda w: {"name": "Reviewers", "permissions": [Permission.objects.get(codename="change_oauthclient").pk]},
        lambda w: Group.objects.filter(name="Reviewers").exists(),
    ),
    "email address: add, verified": Door(
        lambda w: "/admin/account/emailaddress/add/",
        lambda w: {"user": w.end_user.pk, "email": "someone@attacker.example", "verified": "on"},
        lambda w: EmailAddress.objects.filter(email="someone@attacker.example").exists(),
    ),
    "email address: marked verified": Door(
        lambda w: "/admin/account/emailaddress/",
        lambda w: {"action": "make_verified", "_selected_action": [w.address.pk]},
        lambda w: EmailAddress.objects.get(pk=w.address.pk).verified,
    ),
    "second factor: delete": Door(
        lambda w: f"/admin/mfa/authenticator/{w.totp.pk}/delete/",
        lambda w: {"post": "yes"},
        lambda w: not Authenticator.objects.filter(pk=w.totp.pk).exists(),
    ),
    "upstream link: add": Door(
        lambda w: "/admin/socialaccount/socialaccount/add/",
        lambda w: {
            "user": w.end_user.pk,
            "provider": w.provider.slug,
            "uid": "someone-upstream",
            "extra_data": '{"sub": "someone-upstream"}',
        },
        lambda w: SocialAccount.objects.filter(uid="someone-upstream", user=w.end_user).exists(),
    ),
}


@pytest.fixture
def stale_admin(servers_and_tokens, settings):
    """The reviewer with an authenticator app, signed in with it (password, then code) an hour ago;
    the staff rule on, as in production."""
    settings.OAUTH_STAFF_MFA_REQUIRED = True
    # The sign-in and the confirmation each use a code of their own: the sign-in's is the previous
    # period's, which allauth accepts with a tolerance of one period.
    settings.MFA_TOTP_TOLERANCE = 1
    # allauth counts confirmations per user id (10 a minute), in the in-process cache, and ids come
    # again from test to test: each test starts from none.
    cache.clear()
    secret = pyotp.random_base32()
    TOTP.activate(servers_and_tokens.reviewer, secret)
    browser, answer = log_in("reviewer")
    assert answer["Location"].startswith("/accounts/2fa/authenticate/")
    assert second_step(browser, pyotp.TOTP(secret).at(time.time() - 30)).status_code == 302
    assert browser.get("/admin/").status_code == 200
    _age_the_sign_in(browser, 3600)
    return browser, secret


@pytest.mark.parametrize("name", DOORS)
def test_a_door_that_grants_power_asks_an_old_sign_in_to_confirm_with_the_factor(name, servers_and_tokens, stale_admin):
    door = DOORS[name]
    browser, secret = stale_admin
    path = door.path(servers_and_tokens)
    assert not door.changed(servers_and_tokens)
    stale = browser.post(path, door.data(servers_and_tokens))
    assert stale.status_code == 302 and stale["Location"].startswith(f"{CONFIRM}?next="), (stale.status_code, name)
    assert not door.changed(servers_and_tokens)
    # Confirmed with the app's code: allauth replays the POST it kept.
    confirmed = browser.post(CONFIRM, {"code": pyotp.TOTP(secret).now(), "next": path})
    assert confirmed.status_code in (200, 302), confirmed.content[:1000]
    assert door.changed(servers_and_tokens), (name, confirmed.status_code, confirmed.content[:1000])


def test_a_recent_sign_in_without_the_factor_confirms_it_first(servers_and_tokens, settings):
    # The staff rule off, so that the recent-sign-in rule alone decides: a password sign-in a
    # moment ago is not enough for someone who has a second factor.
    settings.OAUTH_STAFF_MFA_REQUIRED = False
    secret = pyotp.random_base32()
    TOTP.activate(servers_and_tokens.reviewer, secret)
    browser = Client()
    browser.force_login(servers_and_tokens.reviewer)  # a password sign-in, now (tests/conftest.py)
    path = "/admin/oauthclients/exchangetarget/add/"
    data = {"client": servers_and_tokens.mcp.pk, "target": _server_pk(BOOKINGS)}
    stale = browser.post(path, data)
    assert stale.status_code == 302 and stale["Location"].startswith(f"{CONFIRM}?next=")
    assert exchange_target_uris(client=servers_and_tokens.mcp) == [CALENDAR]
    browser.post(CONFIRM, {"code": pyotp.TOTP(secret).now(), "next": path})
    assert exchange_target_uris(client=servers_and_tokens.mcp) == [BOOKINGS, CALENDAR]


def test_a_wrong_code_changes_nothing(servers_and_tokens, stale_admin):
    browser, _secret = stale_admin
    path = f"/admin/accounts/assertionpolicy/{servers_and_tokens.policy.pk}/delete/"
    browser.post(path, {"post": "yes"})
    refused = browser.post(CONFIRM, {"code": "000000", "next": path})
    assert refused.status_code == 200
    assert AssertionPolicy.objects.filter(pk=servers_and_tokens.policy.pk).exists()
    assert not AccountAuditEvent.objects.filter(action=AccountAuditAction.ASSERTIONS_DENIED).exists()


def test_a_recent_sign_in_with_the_factor_goes_straight_through(servers_and_tokens, settings):
    settings.OAUTH_STAFF_MFA_REQUIRED = True
    secret = pyotp.random_base32()
    TOTP.activate(servers_and_tokens.reviewer, secret)
    browser, _ = log_in("reviewer")
    second_step(browser, pyotp.TOTP(secret).now())
    answer = browser.post(
        f"/admin/oauthclients/exchangetarget/{servers_and_tokens.calendar_target.pk}/delete/", {"post": "yes"}
    )
    assert answer.status_code == 302 and answer["Location"] == "/admin/oauthclients/exchangetarget/"
    assert not ExchangeTarget.objects.exists()


# --- no door left out ---------------------------------------------------------------------------------


def _writes(model_admin, request) -> bool:
    return bool(
        model_admin.has_add_permission(request)
        or model_admin.has_change_permission(request)
        or model_admin.has_delete_permission(request)
    )


def test_every_admin_page_that_writes_is_behind_the_rule(reviewer):
    request = RequestFactory().post("/admin/")
    request.user = reviewer  # a superuser: every permission Django would check
    registered = {model._meta.label_lower: model_admin for model, model_admin in admin.site._registry.items()}
    unguarded = sorted(
        label
        for label, model_admin in registered.items()
        if label not in RECENT_LOGIN_ADMIN_MODELS and label not in NO_POWER_TO_GRANT and _writes(model_admin, request)
    )
    assert unguarded == []
    # Every guarded model is there, each door of it named (a typo would guard nothing).
    assert set(RECENT_LOGIN_ADMIN_MODELS) <= set(registered)
    for label in RECENT_LOGIN_ADMIN_MODELS:
        assert admin_view_names(label) <= RECENT_LOGIN_VIEWS


def test_allauths_unused_provider_and_token_pages_are_gone(reviewer):
    # Providers come from IdentityProvider only, upstream tokens are not stored: a SocialApp page
    # would keep a client secret in plain text and sign nobody in.
    from allauth.socialaccount.models import SocialApp, SocialToken

    assert not admin.site.is_registered(SocialApp) and not admin.site.is_registered(SocialToken)
    browser = Client()
    browser.force_login(reviewer)
    assert browser.get("/admin/socialaccount/socialapp/add/").status_code == 404
    assert browser.get("/admin/socialaccount/socialaccount/").status_code == 200


def test_the_door_list_names_real_views():
    from django.urls import NoReverseMatch, reverse

    unknown = []
    for name in RECENT_LOGIN_VIEWS:
        for args in ([], [1], ["some-client-id"]):
            try:
                reverse(name, args=args)
                break
            except NoReverseMatch:
                continue
        else:
            unknown.append(name)
    assert unknown == []
