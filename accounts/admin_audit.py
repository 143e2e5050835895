"""The admin pages of accounts that Django and allauth register, with every change on the audit
trail (SECURITY.md, "Accounts and the login": audited, with the administrator).

Users (staff and superuser status, permissions, groups, someone's password), groups (their
permissions), email addresses (a reset goes there; a verified one names a person to ID-JAG and to
an organization's sign-in), someone's second factors and upstream links: each addition, change
and deletion, through every door (the form, the list's actions, the password page), writes an
`AccountAuditEvent` with the administrator, in the transaction of the change (issue 38: before, only
Django's admin history had them). The detail names the model, the object, the fields the form
changed and what the object grants after the change; never a secret (a password is named as a
changed field, never written).

allauth's `UserSession` page is read-only: a record of a session ends or grants nothing there, and
moving one to another account would keep a session out of "Sign out everywhere".

Loaded by accounts.apps, after the admin modules it replaces the registrations of.
"""

import allauth.account.admin
import allauth.mfa.admin
import allauth.socialaccount.admin
import allauth.usersessions.admin
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.socialaccount.models import SocialAccount
from allauth.usersessions.models import UserSession
from django.contrib import admin
from django.contrib.auth import admin as auth_admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from accounts.audit import account_audit_record
from accounts.models import AccountAuditAction


def _permissions(permissions) -> list[str]:
    return sorted(f"{permission.content_type.app_label}.{permission.codename}" for permission in permissions.all())


def _grants(obj) -> dict:
    """What `obj` grants, as it stands: the values an auditor reads, never a secret."""
    if isinstance(obj, get_user_model()):
        return {
            "username": obj.get_username(),
            "is_active": obj.is_active,
            "is_staff": obj.is_staff,
            "is_superuser": obj.is_superuser,
            "groups": sorted(obj.groups.values_list("name", flat=True)) if obj.pk else [],
            "permissions": _permissions(obj.user_permissions) if obj.pk else [],
        }
    if isinstance(obj, Group):
        return {"name": obj.name, "permissions": _permissions(obj.permissions) if obj.pk else []}
    if isinstance(obj, EmailAddress):
        return {"email": obj.email, "verified": obj.verified, "primary": obj.primary}
    if isinstance(obj, Authenticator):
        return {"type": obj.type}
    if isinstance(obj, SocialAccount):
        return {"provider": obj.provider, "uid": obj.uid}
    return {}


def _account_of(obj):
    if isinstance(obj, get_user_model()):
        return obj
    return getattr(obj, "user", None)


def _changed_fields(message) -> list[str]:
    """The fields named by Django's change message (the form's changed data, by label)."""
    fields: list[str] = []
    for part in message if isinstance(message, list) else []:
        for kind in ("added", "changed", "deleted"):
            fields.extend((part.get(kind) or {}).get("fields", []))
    return sorted(set(fields))


def admin_change_audit(*, actor, action: AccountAuditAction, obj, fields: list[str] | None = None) -> None:
    """One admin change of `obj` on the audit trail, in the caller's transaction."""
    detail = {"model": obj._meta.label_lower, "object_id": obj.pk, **_grants(obj)}
    if fields is not None:
        detail["fields"] = fields
    account_audit_record(actor=actor, user=_account_of(obj), action=action, **detail)


class AuditedAdmin:
    """Every addition, change and deletion through this model's admin, on the audit trail."""

    def log_addition(self, request, obj, message):
        admin_change_audit(actor=request.user, action=AccountAuditAction.ADMIN_ADDED, obj=obj)
        return super().log_addition(request, obj, message)

    def log_change(self, request, obj, message):
        admin_change_audit(
            actor=request.user, action=AccountAuditAction.ADMIN_CHANGED, obj=obj, fields=_changed_fields(message)
        )
        return super().log_change(request, obj, message)

    # Deletions: the audit row and the deletion in one transaction (the list's "delete selected"
    # logs before it deletes, outside any transaction of its own).
    def delete_model(self, request, obj):
        with transaction.atomic():
            admin_change_audit(actor=request.user, action=AccountAuditAction.ADMIN_DELETED, obj=obj)
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for obj in queryset:
                admin_change_audit(actor=request.user, action=AccountAuditAction.ADMIN_DELETED, obj=obj)
            super().delete_queryset(request, queryset)


class UserAdmin(AuditedAdmin, auth_admin.UserAdmin):
    def user_change_password(self, request, id, form_url=""):
        # Django sets the password and logs the change apart: one transaction, audit row included.
        with transaction.atomic():
            return super().user_change_password(request, id, form_url)


class GroupAdmin(AuditedAdmin, auth_admin.GroupAdmin):
    pass


class EmailAddressAdmin(AuditedAdmin, allauth.account.admin.EmailAddressAdmin):
    actions = ["make_verified"]

    @admin.action(description=allauth.account.admin.EmailAddressAdmin.make_verified.short_description)
    def make_verified(self, request, queryset):
        unverified = list(queryset.filter(verified=False).values_list("pk", flat=True))
        with transaction.atomic():
            super().make_verified(request, queryset)
            for address in EmailAddress.objects.filter(pk__in=unverified, verified=True).select_related("user"):
                admin_change_audit(
                    actor=request.user, action=AccountAuditAction.ADMIN_CHANGED, obj=address, fields=["verified"]
                )


class AuthenticatorAdmin(AuditedAdmin, allauth.mfa.admin.AuthenticatorAdmin):
    pass


class SocialAccountAdmin(AuditedAdmin, allauth.socialaccount.admin.SocialAccountAdmin):
    pass


class UserSessionAdmin(allauth.usersessions.admin.UserSessionAdmin):
    """Read-only: the list and each record, nothing to add, change or delete."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


for _model, _model_admin in (
    (get_user_model(), UserAdmin),
    (Group, GroupAdmin),
    (EmailAddress, EmailAddressAdmin),
    (Authenticator, AuthenticatorAdmin),
    (SocialAccount, SocialAccountAdmin),
    (UserSession, UserSessionAdmin),
):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)
    admin.site.register(_model, _model_admin)
