"""Reads about accounts: where a signed-in user lands, how a session signed in, which accounts
an organization's provider is the only way in for, and which providers can be offered."""

import hashlib
import logging
import time

from allauth.account import app_settings as account_settings
from allauth.account.authentication import get_authentication_records
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import TOTP, validate_totp_code
from allauth.mfa.utils import decrypt, is_mfa_enabled
from allauth.socialaccount.models import SocialAccount
from django.core.cache import cache
from django.db import models
from django.urls import reverse
from django.utils.http import urlencode

from accounts.identity import email_domain
from accounts.models import IdentityProvider, SelfSignup
from oauthclients.selectors import client_exists_for_owner
from signing.keys import SealedSecretUnusable, secret_open

log = logging.getLogger(__name__)


def landing_url_for(user) -> str:
    """A developer (anyone who owns a client) lands on the developer page; everyone else on Connected apps."""
    if client_exists_for_owner(owner=user):
        return reverse("developer:client_list")
    return reverse("oauth:connected_apps")


def authenticator_list_for_user(*, user) -> list:
    """The user's second factors (TOTP, recovery codes, passkeys), oldest first."""
    return list(Authenticator.objects.filter(user=user).order_by("created_at", "pk"))


# --- how this session signed in (OpenID Connect amr/acr, the staff rule, recent logins) ----------

# RFC 8176 method references, and our two documented acr levels (docs/accounts.md).
ACR_ONE_FACTOR = "urn:scheduling:acr:1fa"
ACR_TWO_FACTORS = "urn:scheduling:acr:2fa"
ACR_VALUES_SUPPORTED = (ACR_ONE_FACTOR, ACR_TWO_FACTORS)
# Upstream amr values that mean the provider asked for a second factor (RFC 8176 §2): "mfa" says
# so, and a one-time code or a hardware key is never a provider's only factor. A biometric or a
# software key alone ("face", "swk") can be a single factor, and does not count.
UPSTREAM_MFA_AMR = frozenset({"mfa", "otp", "hwk"})
SECOND_FACTOR_TYPES = ("totp", "webauthn")


def _records(request) -> list[dict]:
    """This session's sign-in records whose factor the account still has.

    A record names the factor it used: a second factor by its authenticator's id, an upstream
    sign-in by its (provider, uid) link. One removed since (the only passkey an administrator
    signed in with, and the recovery codes that went with it; an unlinked provider) no longer
    counts, in this session or any other: the staff rule, a recent sign-in and `amr` all read the
    factors the account holds now (issue 38). A password record stands: a password change keeps
    this session (docs/accounts.md)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return []
    records = [record for record in get_authentication_records(request, user) if isinstance(record, dict)]
    methods = {record.get("method") for record in records}
    held_factors, held_links = set(), set()
    if "mfa" in methods:
        held_factors = set(Authenticator.objects.filter(user_id=user.pk).values_list("pk", flat=True))
    if "socialaccount" in methods:
        held_links = set(SocialAccount.objects.filter(user_id=user.pk).values_list("provider", "uid"))
    return [
        record
        for record in records
        if (record.get("method") != "mfa" or record.get("id") in held_factors)
        and (record.get("method") != "socialaccount" or (record.get("provider"), record.get("uid")) in held_links)
    ]


def _record_amr(record: dict) -> set[str]:
    method = record.get("method")
    if method == "password":
        return {"pwd"}
    if method == "mfa":
        if record.get("type") == "webauthn":
            # A passwordless passkey login: a device the user holds, unlocked by them (user
            # verification): two factors in one (issue 29).
            return {"hwk", "mfa"} if record.get("passwordless") else {"hwk"}
        return {"otp"}  # TOTP, or a single-use recovery code
    if method == "socialaccount":
        return {"fed", "mfa"} if record.get("upstream_mfa") else {"fed"}
    return set()


def _record_at(record: dict) -> float:
    """When a sign-in record's person authenticated: when it was recorded, or, for an upstream
    sign-in, the provider's `auth_time` when that is older (OpenID Connect Core §2: a provider's
    session may have signed the person in long before; accounts.adapter.record_upstream_amr)."""
    at = record.get("at", 0)
    upstream = record.get("upstream_auth_time")
    if record.get("method") == "socialaccount" and isinstance(upstream, int | float) and not isinstance(upstream, bool):
        return min(at, upstream)
    return at


def session_amr(*, request, since: float | None = None) -> list[str]:
    """RFC 8176 `amr` of this session's sign-in (records at or after `since`, seconds since the epoch)."""
    methods: set[str] = set()
    for record in _records(request):
        if since is None or _record_at(record) >= since:
            methods |= _record_amr(record)
    # Two different factors in one session are multi-factor (RFC 8176 §2 "mfa").
    if "pwd" in methods and methods & {"otp", "hwk"}:
        methods.add("mfa")
    return sorted(methods)


def acr_for(amr: list[str]) -> str:
    return ACR_TWO_FACTORS if "mfa" in amr else ACR_ONE_FACTOR


def session_has_second_factor(*, request) -> bool:
    return "mfa" in session_amr(request=request)


def user_has_second_factor(*, user) -> bool:
    return is_mfa_enabled(user, list(SECOND_FACTOR_TYPES))


def second_factor_is_last(*, user, authenticator) -> bool:
    """Whether `authenticator` (an authenticator app or a passkey) is the last second factor of `user`:
    removing it takes the recovery codes with it (allauth) and leaves the password alone."""
    return (
        authenticator.type in SECOND_FACTOR_TYPES
        and not Authenticator.objects.filter(user_id=user.pk, type__in=SECOND_FACTOR_TYPES)
        .exclude(pk=authenticator.pk)
        .exists()
    )


def user_has_totp(*, user) -> bool:
    return is_mfa_enabled(user, ["totp"])


def login_is_recent(*, request) -> bool:
    """A sign-in within ACCOUNT_REAUTHENTICATION_TIMEOUT seconds, with the user's second factor when
    they have one (SECURITY.md, "Accounts and the login": approving, rotating, changing factors)."""
    since = time.time() - account_settings.REAUTHENTICATION_TIMEOUT
    amr = session_amr(request=request, since=since)
    if user_has_second_factor(user=request.user):
        return bool({"otp", "hwk", "mfa"} & set(amr))
    return bool(amr)


def totp_code_already_used(*, user, code: str) -> bool:
    """Whether `code` is right for `user`'s authenticator app now but was used within its period
    (allauth's used-code store, RFC 6238 §5.2): to say so rather than "Incorrect code"."""
    authenticator = Authenticator.objects.filter(user_id=user.pk, type=Authenticator.Type.TOTP).first()
    if authenticator is None or not code:
        return False
    if not validate_totp_code(decrypt(authenticator.data["secret"]), code):
        return False
    return cache.get(TOTP(authenticator)._get_used_cache_key(code)) is not None


def upstream_reauthentication_url(*, user, provider=None) -> str | None:
    """The login URL of `provider` (default: the identity provider `user` is linked to), asking it to
    sign them in again."""
    if provider is not None:
        slug = provider.slug
    else:
        account = SocialAccount.objects.filter(user=user, provider__in=_provider_slugs()).order_by("pk").first()
        if account is None:
            return None
        slug = account.provider
    # OpenID Connect Core §3.1.2.1: prompt=login and max_age=0 make the provider ask again; the ID
    # token's auth_time then says it did (session_amr reads a sign-in's age from it).
    query = urlencode({"process": "login", "auth_params": "prompt=login&max_age=0"})
    return f"{reverse('openid_connect_login', kwargs={'provider_id': slug})}?{query}"


def _provider_slugs() -> list[str]:
    return list(IdentityProvider.objects.values_list("slug", flat=True))


def email_is_verified(*, user, email: str) -> bool:
    """Whether `user` proved `email` (allauth's EmailAddress, verified)."""
    return EmailAddress.objects.filter(user=user, email__iexact=email, verified=True).exists()


# --- organizations' domains (IdentityProvider.enforce) ---------------------------------------------


def enforcing_provider_for_email(*, email: str):
    """The identity provider that is the only way in for `email`'s domain (`--enforce`), if any."""
    domain = email_domain(email)
    if not domain:
        return None
    for provider in IdentityProvider.objects.filter(enforce=True).order_by("pk"):
        if domain in provider.domains:
            return provider
    return None


def enforcing_provider_for_user(*, user):
    """The enforced provider `user` signs in through only: one it is linked to (a single sign-on
    made the link), else one enforced for the domain of an address it *proved*. An address it merely
    claimed (unverified, or a bare `User.email`) enforces nothing: typing an organization's address
    into another account does not lock that account out. Neither a password, a passkey nor a
    personal address frees an enforced account; an administrator does, by removing its link and
    its proved addresses at the domain (docs/accounts.md, "Enforced domains")."""
    if user is None or user.pk is None:
        return None
    enforcing = list(IdentityProvider.objects.filter(enforce=True).order_by("pk"))
    if not enforcing:
        return None
    linked = set(SocialAccount.objects.filter(user=user).values_list("provider", flat=True))
    for provider in enforcing:
        if provider.slug in linked:
            return provider
    proved = {
        email_domain(address)
        for address in EmailAddress.objects.filter(user=user, verified=True).values_list("email", flat=True)
    }
    for provider in enforcing:
        if proved & set(provider.domains):
            return provider
    return None


def upstream_amr_of(sociallogin) -> list[str]:
    """The `amr` the upstream provider put in its ID token (RFC 8176), strings only."""
    claims = (sociallogin.account.extra_data or {}).get("id_token") or {}
    amr = claims.get("amr") if isinstance(claims, dict) else None
    return sorted({value for value in amr if isinstance(value, str)}) if isinstance(amr, list) else []


def upstream_auth_time_of(sociallogin) -> int | None:
    """When the upstream provider says it authenticated the person (the ID token's `auth_time`,
    OpenID Connect Core §2), seconds since the epoch; None when it did not say."""
    claims = (sociallogin.account.extra_data or {}).get("id_token") or {}
    auth_time = claims.get("auth_time") if isinstance(claims, dict) else None
    return auth_time if isinstance(auth_time, int) and not isinstance(auth_time, bool) else None


def self_signup_must_verify(*, user) -> bool:
    """Whether `user` made their own account at the sign-up page (accounts.models.SelfSignup): such
    an account signs in only once it has proved an address (accounts.stages)."""
    return SelfSignup.objects.filter(user_id=user.pk).exists()


def provider_refusing_direct_login(*, user):
    """The enforced provider that is `user`'s only way in, refusing a sign-in here (a password or a
    passkey) — None for other accounts, and for superusers with a second factor, who keep a way in
    that does not depend on the provider (docs/accounts.md, "Enforced domains")."""
    provider = enforcing_provider_for_user(user=user)
    if provider is None or (user.is_superuser and user_has_second_factor(user=user)):
        return None
    return provider


class EnforcedStep(models.TextChoices):
    """What an account its organization's provider is the only way in for would do to leave it."""

    REMOVE_ADDRESS = "remove_address", "remove its organization's address"
    MAKE_PRIMARY = "make_primary", "make another address primary"
    SET_PASSWORD = "set_password", "set or change a password"
    UNLINK = "unlink", "remove its link to the provider"


def enforced_step_refusal(*, user, step: EnforcedStep, email: str = ""):
    """The enforced provider that refuses `step` to `user`, or None when the step is allowed. An
    account provider_refusing_direct_login names keeps its proved addresses at the provider's
    domains, keeps one of them primary, has no password of this site to set, and keeps its link:
    otherwise removing the address would free it, and the others would pretend to (a password or a
    personal address never signs it in while it is enforced). Everyone else is free to do all four;
    so are superusers with a second factor (their break-glass way in)."""
    provider = provider_refusing_direct_login(user=user)
    if provider is None:
        return None
    at_domain = email_domain(email) in provider.domains
    if step == EnforcedStep.REMOVE_ADDRESS:
        return provider if at_domain and email_is_verified(user=user, email=email) else None
    if step == EnforcedStep.MAKE_PRIMARY:
        return None if at_domain else provider
    return provider  # SET_PASSWORD, UNLINK


# --- identity providers whose client secret does not open ----------------------------------------

# (slug, digest of the sealed value) already logged by this process: a misconfiguration is logged
# once, not at every login page.
_unopenable_logged: set[tuple[str, str]] = set()


def identity_provider_secret(*, provider: IdentityProvider) -> str | None:
    """`provider`'s client secret, opened (only in memory, to use it); None when it does not open
    (OAUTH_SIGNING_KEY_ENCRYPTION_KEY unset, or not the value it was sealed under): the provider is
    then not offered, and the login page renders without it. Logged once per process and sealed
    value, naming the provider and the setting, never any part of the secret."""
    try:
        return secret_open(provider.client_secret_sealed)
    except SealedSecretUnusable as exc:
        seen = (provider.slug, hashlib.sha256(provider.client_secret_sealed.encode()).hexdigest())
        if seen not in _unopenable_logged:
            _unopenable_logged.add(seen)
            log.error(
                "Identity provider %s is not offered at sign-in: its client secret does not open. %s",
                provider.slug,
                exc,
            )
        return None


def identity_provider_list_unavailable() -> list[IdentityProvider]:
    """Providers configured but not offered (their client secret does not open), for the login page to say so."""
    return [
        provider for provider in IdentityProvider.objects.all() if identity_provider_secret(provider=provider) is None
    ]


def identity_provider_secret_problems() -> list[str]:
    """One sentence for each provider whose client secret does not open, naming it and the setting:
    `check --deploy --database default` (accounts.E001) and /readyz ask this."""
    problems = []
    for provider in IdentityProvider.objects.order_by("slug"):
        try:
            secret_open(provider.client_secret_sealed)
        except SealedSecretUnusable as exc:
            problems.append(f"identity provider {provider.slug}: {exc}")
    return problems
