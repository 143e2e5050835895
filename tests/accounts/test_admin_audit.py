"""Every admin change to users, groups, email addresses, someone's second factors and upstream links
is on the audit trail with the administrator, through every door (accounts.admin_audit; issue 38,
"Also": before, only Django's admin history had them). The record of a session is read-only.

Each door below is the attack: an administrator's change that grants a power (staff, superuser, a
permission, a verified address, an upstream link) or takes one away, which left no audit row.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import pyotp
import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.base.internal.flows import delete_and_cleanup
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP
from allauth.socialaccount.models import SocialAccount
from allauth.usersessions.models import UserSession
from django.contrib.auth.models import Group, Permission
from django.test import Client, RequestFactory

from accounts.models import AccountAuditAction, AccountAuditEvent
from accounts.services import identity_provider_add
from tests.accounts.helpers import log_in
from tests.factories import make_user

NEW_PASSWORD = "a-new-password-nobody-guesses-42"
ADDED, CHANGED, DELETED = (
    AccountAuditAction.ADMIN_ADDED,
    AccountAuditAction.ADMIN_CHANGED,
    AccountAuditAction.ADMIN_DELETED,
)


@dataclass
class World:
    end_user: object
    group: object
    address: object
    totp: object
    link: object


@pytest.fixture
def audit_world(end_user):
    # The date the admin's form posts back (below): unchanged, so that a change names only its fields.
    type(end_user).objects.filter(pk=end_user.pk).update(date_joined=datetime(2025, 1, 1, tzinfo=UTC))
    identity_provider_add(
        name="ACME",
        issuer="https://sso.acme.example",
        client_id="ours",
        client_secret="s3cret",
        domains=["acme.example"],
        enforce=False,
    )
    group = Group.objects.create(name="Reviewers")
    address = EmailAddress.objects.create(user=end_user, email="enduser@example.com", verified=False, primary=True)
    totp = TOTP.activate(end_user, pyotp.random_base32()).instance
    link = SocialAccount.objects.create(user=end_user, provider="acme", uid="sub-1", extra_data={})
    return World(end_user, group, address, totp, link)


def _permission(codename: str) -> int:
    return Permission.objects.get(codename=codename).pk


def _user_form(w, **changes) -> dict:
    form = {
        "username": "enduser",
        "email": "enduser@example.com",
        "is_active": "on",
        "date_joined_0": "2025-01-01",
        "date_joined_1": "00:00:00",
    }
    return {key: value for key, value in {**form, **changes}.items() if value is not None}


def _delete_selected(pk) -> dict:
    return {"action": "delete_selected", "_selected_action": [pk], "post": "yes"}


@dataclass
class Door:
    path: Callable[[World], str]
    data: Callable[[World], dict]
    action: AccountAuditAction
    model: str
    expected: dict  # what the audit row's detail says after the change (a subset)


DOORS = {
    "user: made staff": Door(
        lambda w: f"/admin/auth/user/{w.end_user.pk}/change/",
        lambda w: _user_form(w, is_staff="on"),
        CHANGED,
        "auth.user",
        {"is_staff": True, "is_superuser": False, "fields": ["Staff status"]},
    ),
    "user: given a group and a permission": Door(
        lambda w: f"/admin/auth/user/{w.end_user.pk}/change/",
        lambda w: _user_form(w, groups=[w.group.pk], user_permissions=[_permission("change_oauthclient")]),
        CHANGED,
        "auth.user",
        {"groups": ["Reviewers"], "permissions": ["oauthclients.change_oauthclient"]},
    ),
    "user: deactivated": Door(
        lambda w: f"/admin/auth/user/{w.end_user.pk}/change/",
        lambda w: _user_form(w, is_active=None),
        CHANGED,
        "auth.user",
        {"is_active": False, "fields": ["Active"]},
    ),
    "user: password set": Door(
        lambda w: f"/admin/auth/user/{w.end_user.pk}/password/",
        lambda w: {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
        CHANGED,
        "auth.user",
        {"username": "enduser"},
    ),
    "user: added": Door(
        lambda w: "/admin/auth/user/add/",
        lambda w: {
            "username": "newcomer",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "usable_password": "true",
        },
        ADDED,
        "auth.user",
        {"username": "newcomer", "is_staff": False},
    ),
    "user: deleted": Door(
        lambda w: f"/admin/auth/user/{w.end_user.pk}/delete/",
        lambda w: {"post": "yes"},
        DELETED,
        "auth.user",
        {"username": "enduser"},
    ),
    "group: added with a permission": Door(
        lambda w: "/admin/auth/group/add/",
        lambda w: {"name": "Approvers", "permissions": [_permission("change_oauthclient")]},
        ADDED,
        "auth.group",
        {"name": "Approvers", "permissions": ["oauthclients.change_oauthclient"]},
    ),
    "group: permission given": Door(
        lambda w: f"/admin/auth/group/{w.group.pk}/change/",
        lambda w: {"name": "Reviewers", "permissions": [_permission("change_oauthclient")]},
        CHANGED,
        "auth.group",
        {"permissions": ["oauthclients.change_oauthclient"], "fields": ["Permissions"]},
    ),
    "group: deleted from the list": Door(
        lambda w: "/admin/auth/group/",
        lambda w: _delete_selected(w.group.pk),
        DELETED,
        "auth.group",
        {"name": "Reviewers"},
    ),
    "email address: added, verified": Door(
        lambda w: "/admin/account/emailaddress/add/",
        lambda w: {"user": w.end_user.pk, "email": "someone@attacker.example", "verified": "on"},
        ADDED,
        "account.emailaddress",
        {"email": "someone@attacker.example", "verified": True},
    ),
    "email address: marked verified from the list": Door(
        lambda w: "/admin/account/emailaddress/",
        lambda w: {"action": "make_verified", "_selected_action": [w.address.pk]},
        CHANGED,
        "account.emailaddress",
        {"email": "enduser@example.com", "verified": True, "fields": ["verified"]},
    ),
    "email address: changed": Door(
        lambda w: f"/admin/account/emailaddress/{w.address.pk}/change/",
        lambda w: {"user": w.end_user.pk, "email": "other@attacker.example", "verified": "on", "primary": "on"},
        CHANGED,
        "account.emailaddress",
        {"email": "other@attacker.example", "verified": True},
    ),
    "second factor: deleted": Door(
        lambda w: f"/admin/mfa/authenticator/{w.totp.pk}/delete/",
        lambda w: {"post": "yes"},
        DELETED,
        "mfa.authenticator",
        {"type": "totp"},
    ),
    "second factor: deleted from the list": Door(
        lambda w: "/admin/mfa/authenticator/",
        lambda w: _delete_selected(w.totp.pk),
        DELETED,
        "mfa.authenticator",
        {"type": "totp"},
    ),
    "upstream link: added": Door(
        lambda w: "/admin/socialaccount/socialaccount/add/",
        lambda w: {
            "user": w.end_user.pk,
            "provider": "acme",
            "uid": "someone-upstream",
            "extra_data": '{"sub": "someone-upstream"}',
        },
        ADDED,
        "socialaccount.socialaccount",
        {"provider": "acme", "uid": "someone-upstream"},
    ),
    "upstream link: moved to another account": Door(
        lambda w: f"/admin/socialaccount/socialaccount/{w.link.pk}/change/",
        lambda w: {
            "user": make_user("elsewhere").pk,
            "provider": "acme",
            "uid": "sub-1",
            "extra_data": '{"sub": "sub-1"}',
        },
        CHANGED,
        "socialaccount.socialaccount",
        {"provider": "acme", "uid": "sub-1", "fields": ["User"]},
    ),
    "upstream link: deleted": Door(
        lambda w: f"/admin/socialaccount/socialaccount/{w.link.pk}/delete/",
        lambda w: {"post": "yes"},
        DELETED,
        "socialaccount.socialaccount",
        {"provider": "acme", "uid": "sub-1"},
    ),
}


@pytest.mark.parametrize("name", DOORS)
def test_an_admin_change_to_an_account_is_audited_with_the_administrator(name, audit_world, staff, reviewer):
    door = DOORS[name]
    answer = staff.post(door.path(audit_world), door.data(audit_world))
    assert answer.status_code == 302, (name, answer.content[:2000])
    (event,) = AccountAuditEvent.objects.filter(action=door.action, detail__model=door.model)
    assert event.actor == reviewer
    detail, expected = event.detail, dict(door.expected)
    assert set(expected.pop("fields", [])) <= set(detail.get("fields", [])), detail
    assert {key: detail.get(key) for key in expected} == expected, detail
    assert detail["object_id"] is not None
    # The account concerned, where there is one (a group concerns none); a deleted one is gone.
    if door.model != "auth.group" and door.action != DELETED:
        assert event.user is not None
    assert NEW_PASSWORD not in str(detail) and "pbkdf2" not in str(detail) and "md5$" not in str(detail)


def test_a_refused_change_leaves_no_audit_row(audit_world, staff):
    # A form the admin refuses (two passwords that differ) changes nothing and audits nothing.
    answer = staff.post(
        f"/admin/auth/user/{audit_world.end_user.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": "something-else-42", "usable_password": "true"},
    )
    assert answer.status_code == 200
    assert not AccountAuditEvent.objects.filter(action__startswith="admin_").exists()


def test_the_record_of_a_session_is_read_only_in_the_admin(end_user, reviewer, staff):
    log_in("enduser")
    session = UserSession.objects.get(user=end_user)
    other = make_user("someone")
    page = staff.get(f"/admin/usersessions/usersession/{session.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    moved = staff.post(f"/admin/usersessions/usersession/{session.pk}/change/", {"user": other.pk, "ip": "1.2.3.4"})
    assert moved.status_code == 403
    assert staff.post(f"/admin/usersessions/usersession/{session.pk}/delete/", {"post": "yes"}).status_code == 403
    listed = staff.post("/admin/usersessions/usersession/", _delete_selected(session.pk))
    assert listed.status_code in (200, 302)
    assert staff.get("/admin/usersessions/usersession/add/").status_code == 403
    session.refresh_from_db()
    assert session.user == end_user
    assert UserSession.objects.filter(pk=session.pk).exists()
    assert Client().get("/admin/usersessions/usersession/").status_code == 302  # and not for strangers


def test_an_authenticator_deleted_by_its_owner_is_audited_as_before(end_user):
    # The owner's own removal goes through allauth's signal (accounts.signals), not the admin: one
    # row, of its own kind, and no admin row.
    totp = TOTP.activate(end_user, pyotp.random_base32()).instance
    request = RequestFactory().post("/")
    request.user = end_user
    delete_and_cleanup(request, totp)
    assert not Authenticator.objects.filter(pk=totp.pk).exists()
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.SECOND_FACTOR_REMOVED).exists()
    assert not AccountAuditEvent.objects.filter(action__startswith="admin_").exists()
