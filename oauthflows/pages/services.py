"""State changes of a user's grants: consent given or refused, access revoked."""

import secrets

from django.db import transaction
from django.utils import timezone

from oauthclients.audit import audit_record
from oauthclients.grants import grants_end
from oauthclients.models import AuditAction, OAuthClient
from oauthflows.pages.selectors import SESSION_AUTH_TIME_KEY, SESSION_SID_KEY


def session_login_record(*, session) -> None:
    """A password login just happened: its time (the ID token's `auth_time`, `max_age`'s clock)
    and a fresh `sid` go into the new session."""
    session[SESSION_AUTH_TIME_KEY] = int(timezone.now().timestamp())
    session[SESSION_SID_KEY] = secrets.token_urlsafe(16)


def session_sid_get_or_create(*, session) -> str:
    """The session's `sid`; a session logged in elsewhere (the admin's login) gets one now."""
    sid = session.get(SESSION_SID_KEY)
    if not isinstance(sid, str) or not sid:
        sid = session[SESSION_SID_KEY] = secrets.token_urlsafe(16)
    return sid


@transaction.atomic
def consent_deny(*, user, client: OAuthClient) -> None:
    audit_record(client=client, actor=user, user=user, action=AuditAction.GRANT_DENIED)


@transaction.atomic
def connected_app_revoke(*, user, client: OAuthClient) -> int:
    """Kill every token this client holds for this user, at once; returns how many families died."""
    families = grants_end(user=user, client=client).refresh_tokens
    audit_record(client=client, actor=user, user=user, action=AuditAction.ACCESS_REVOKED, token_families=families)
    return families
