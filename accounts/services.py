"""Writes about identity providers (add and remove, each audited in its transaction), about how a
session signed in (a factor proved while setting it up), and the record of each sign-in's session."""

import time

from allauth.account import app_settings as account_settings
from allauth.account.adapter import get_adapter as get_account_adapter
from allauth.mfa.base.internal.flows import post_authentication
from allauth.usersessions.models import UserSession
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.text import slugify

from accounts.audit import account_audit_record
from accounts.models import AccountAuditAction, AssertionPolicy, IdentityProvider, SelfSignup
from accounts.selectors import SECOND_FACTOR_TYPES, session_amr
from oauthclients.models import AccessToken, OAuthClient
from oauthclients.validators import validate_scope_names
from scopes.catalog import sort_scopes
from signing.keys import secret_seal


@transaction.atomic
def identity_provider_add(
    *, name: str, issuer: str, client_id: str, client_secret: str, domains: list[str], enforce: bool, actor=None
) -> IdentityProvider:
    """A new upstream provider; its secret is sealed, never kept in the clear."""
    provider = IdentityProvider.objects.create(
        slug=slugify(name)[:40] or "provider",
        name=name,
        issuer=issuer.rstrip("/"),
        client_id=client_id,
        client_secret_sealed=secret_seal(client_secret),
        domains=sorted({domain.strip().lower() for domain in domains if domain.strip()}),
        enforce=enforce,
    )
    account_audit_record(
        actor=actor,
        action=AccountAuditAction.IDENTITY_PROVIDER_ADDED,
        provider=provider.slug,
        issuer=provider.issuer,
        domains=provider.domains,
        enforce=provider.enforce,
    )
    return provider


@transaction.atomic
def identity_provider_change(
    *, slug: str, name: str, client_id: str, client_secret: str, domains: list[str], enforce: bool, actor=None
) -> IdentityProvider:
    """Change what may change (never the issuer: one link, one issuer); an empty secret keeps the old one."""
    provider = IdentityProvider.objects.select_for_update().get(slug=slug)
    provider.name = name
    provider.client_id = client_id
    if client_secret:
        provider.client_secret_sealed = secret_seal(client_secret)
    provider.domains = sorted({domain.strip().lower() for domain in domains if domain.strip()})
    provider.enforce = enforce
    provider.save()
    account_audit_record(
        actor=actor,
        action=AccountAuditAction.IDENTITY_PROVIDER_CHANGED,
        provider=provider.slug,
        domains=provider.domains,
        enforce=provider.enforce,
        secret_replaced=bool(client_secret),
    )
    return provider


@transaction.atomic
def identity_provider_remove(*, slug: str, actor=None) -> None:
    provider = IdentityProvider.objects.select_for_update().get(slug=slug)
    account_audit_record(actor=actor, action=AccountAuditAction.IDENTITY_PROVIDER_REMOVED, provider=slug)
    provider.delete()


def identity_provider_redirect_uri(*, provider: IdentityProvider, issuer: str) -> str:
    """The redirect URI to register at the provider (allauth's openid_connect callback)."""
    return issuer + reverse("openid_connect_callback", kwargs={"provider_id": provider.slug})


def identity_provider_get(*, name: str) -> IdentityProvider:
    """The provider by slug or by name (what an administrator types), or DoesNotExist."""
    return IdentityProvider.objects.filter(models.Q(slug=name) | models.Q(name=name)).get()


@transaction.atomic
def identity_provider_assertions_allow(
    *, provider: IdentityProvider, client: OAuthClient, scopes: list[str], actor=None
) -> AssertionPolicy:
    """The provider may assert (ID-JAG) that its people use `client`, up to `scopes` (empty: the
    client's own). Replaces an earlier policy for the same client."""
    provider = IdentityProvider.objects.select_for_update().get(pk=provider.pk)
    names = sort_scopes(validate_scope_names(list(scopes))) if scopes else []
    policy, _created = AssertionPolicy.objects.update_or_create(
        provider=provider, client=client, defaults={"scopes": names}
    )
    account_audit_record(
        actor=actor,
        action=AccountAuditAction.ASSERTIONS_ALLOWED,
        provider=provider.slug,
        client_id=client.client_id,
        scopes=names,
    )
    return policy


@transaction.atomic
def identity_provider_assertions_deny(*, provider: IdentityProvider, client: OAuthClient, actor=None) -> int:
    """No more assertions for `client`; the access its assertions granted ends now, with every token
    exchanged from it (RFC 8693). Returns how many access tokens ended (JWT status bits are set by
    the database as the rows go)."""
    provider = IdentityProvider.objects.select_for_update().get(pk=provider.pk)
    AssertionPolicy.objects.filter(provider=provider, client=client).delete()
    _, deleted = AccessToken.objects.descending_from_assertions(issuer=provider.issuer, client=client).delete()
    ended = deleted.get(AccessToken._meta.label, 0)
    account_audit_record(
        actor=actor,
        action=AccountAuditAction.ASSERTIONS_DENIED,
        provider=provider.slug,
        client_id=client.client_id,
        access_tokens_ended=ended,
    )
    return ended


def self_signup_record(*, user) -> SelfSignup:
    """`user` made their own account at the sign-up page: it signs in once it has proved an address."""
    record, _created = SelfSignup.objects.get_or_create(user=user)
    return record


def session_factor_set_up_record(*, request, user, authenticator) -> bool:
    """This session just set up `authenticator` (an authenticator app or a passkey) by proving it holds
    it: a fresh second-factor authentication, recorded as allauth records one. Returns whether it was.

    Why: allauth leads a first factor's set-up on to the new recovery codes, whose page asks for a
    recent sign-in with the user's factor (accounts.selectors.login_is_recent), which the session
    signed in with a password alone did not have: it asked for the factor set up a second before.
    The set-up is proof enough: the authenticator app's code was checked (allauth's
    ActivateTOTPForm), the passkey's device answered our challenge for our relying party (allauth's
    AddWebAuthnForm; with attestation "none" nothing is signed at registration, so what it proves is
    that whoever set the passkey up holds it, exactly what a sign-in with it a second later would).

    Not a way around the rule: allauth asks for a recent sign-in before either set-up (with the
    factors the user already has), and this records nothing for a session that was not recent
    itself, for another user's session (a passkey sign-up has none yet), or for recovery codes,
    which are generated here, not proved. Only this session gains; another session of the same
    account still confirms with the factor.
    """
    session_user = getattr(request, "user", None)
    if (
        authenticator.type not in SECOND_FACTOR_TYPES
        or session_user is None
        or not session_user.is_authenticated
        or session_user.pk != user.pk
    ):
        return False
    since = time.time() - account_settings.REAUTHENTICATION_TIMEOUT
    if not session_amr(request=request, since=since):
        return False
    # allauth's own record of a factor used (mfa.base.internal.flows, pinned in
    # tests/accounts/test_allauth_internals.py): method "mfa", its type and id, "reauthenticated"
    # as after its confirmation pages (the user was signed in already); it marks the factor used.
    post_authentication(request, authenticator, reauthenticated=True)
    return True


def user_session_record(*, request, user) -> UserSession:
    """Record the session `user` just signed in with (the session list, "Sign out everywhere"), and
    forget the account's records of sessions that have ended: two statements, however many sessions
    the account has.

    Replaces allauth.usersessions' receiver of `user_logged_in` (disconnected in accounts.apps),
    which loads every recorded session of the account at each sign-in, three statements each (does
    it exist, its data, its user), and then takes three more to record the new one: a person with
    fifty sessions paid 150 statements per sign-in. Here the sessions that no longer exist or have
    expired in the session table go in one DELETE, and the new record is one INSERT (ON CONFLICT:
    allauth's get-or-update of the same key). A session still in the table whose password hash no
    longer matches (signed out by a password change, or by the hash upgrade at sign-in:
    docs/configuration.md, "Password hashing") stays recorded until it is next used, which deletes
    it, or until allauth's session list or "Sign out everywhere" ends it; both check each session
    in full, as before. With a session engine that keeps no table, allauth's check runs as before.
    Kept honest by tests/accounts/test_login_statements.py.
    """
    store = import_string(settings.SESSION_ENGINE + ".SessionStore")
    if issubclass(store, DatabaseSessionStore):
        live = store.get_model_class().objects.filter(expire_date__gt=timezone.now()).values("session_key")
        ended = UserSession.objects.filter(user_id=user.pk).exclude(session_key__in=live)
        ended._raw_delete(ended.db)  # no signal or cascade hangs on a UserSession
    else:
        UserSession.objects.purge_and_list(user)
    if not request.session.session_key:
        request.session.save()
    user_agent_field = UserSession._meta.get_field("user_agent")
    record = UserSession(
        user=user,
        session_key=request.session.session_key,
        ip=get_account_adapter().get_client_ip(request),
        user_agent=request.META.get("HTTP_USER_AGENT", "")[: user_agent_field.max_length],
        last_seen_at=timezone.now(),
    )
    UserSession.objects.bulk_create(
        [record],
        update_conflicts=True,
        unique_fields=["session_key"],
        update_fields=["user", "ip", "user_agent", "last_seen_at"],
    )
    return record
