"""Changes to one's own second factors go on the audit trail (allauth.mfa's signals); setting one up
counts as using it in that session (accounts.services.session_factor_set_up_record); each sign-in's
session is recorded in constant work (accounts.services.user_session_record)."""

from allauth.account import signals as account_signals
from allauth.mfa import signals as mfa_signals
from django.dispatch import receiver

from accounts.audit import account_audit_record
from accounts.models import AccountAuditAction
from accounts.services import session_factor_set_up_record, user_session_record


@receiver(account_signals.user_logged_in, dispatch_uid="accounts_session_recorded")
def _session_recorded(sender, request, user, **kwargs):
    # In place of allauth.usersessions' own receiver, which accounts.apps disconnects.
    user_session_record(request=request, user=user)


@receiver(mfa_signals.authenticator_added, dispatch_uid="accounts_factor_added")
def _factor_added(sender, request, user, authenticator, **kwargs):
    account_audit_record(
        actor=user,
        user=user,
        action=AccountAuditAction.SECOND_FACTOR_ADDED,
        type=authenticator.type,
        id=authenticator.pk,
    )


@receiver(mfa_signals.authenticator_added, dispatch_uid="accounts_factor_added_proves_it")
def _factor_added_proves_it(sender, request, user, authenticator, **kwargs):
    # allauth sends this once the factor is stored (after its transaction commits, for TOTP).
    session_factor_set_up_record(request=request, user=user, authenticator=authenticator)


@receiver(mfa_signals.authenticator_removed, dispatch_uid="accounts_factor_removed")
def _factor_removed(sender, request, user, authenticator, **kwargs):
    account_audit_record(
        actor=user,
        user=user,
        action=AccountAuditAction.SECOND_FACTOR_REMOVED,
        type=authenticator.type,
        id=authenticator.pk,
    )


@receiver(mfa_signals.authenticator_reset, dispatch_uid="accounts_factor_reset")
def _factor_reset(sender, request, user, authenticator, **kwargs):
    account_audit_record(
        actor=user, user=user, action=AccountAuditAction.RECOVERY_CODES_REGENERATED, type=authenticator.type
    )
