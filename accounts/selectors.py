"""Reads about accounts: where a signed-in user lands."""

from django.urls import reverse

from oauthclients.selectors import client_exists_for_owner


def landing_url_for(user) -> str:
    """A developer (anyone who owns a client) lands on the developer page; everyone else on Connected apps."""
    if client_exists_for_owner(owner=user):
        return reverse("developer:client_list")
    return reverse("oauth:connected_apps")


def authenticator_list_for_user(*, user) -> list:
    """The user's second factors (TOTP, recovery codes, passkeys), oldest first."""
    from allauth.mfa.models import Authenticator  # models: not at import time of the URLconf

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
    from allauth.account.authentication import get_authentication_records

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return []
    return [record for record in get_authentication_records(request, user) if isinstance(record, dict)]


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


def session_amr(*, request, since: float | None = None) -> list[str]:
    """RFC 8176 `amr` of this session's sign-in (records at or after `since`, seconds since the epoch)."""
    methods: set[str] = set()
    for record in _records(request):
        if since is None or record.get("at", 0) >= since:
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
    from allauth.mfa.utils import is_mfa_enabled

    return is_mfa_enabled(user, list(SECOND_FACTOR_TYPES))


def user_has_totp(*, user) -> bool:
    from allauth.mfa.utils import is_mfa_enabled

    return is_mfa_enabled(user, ["totp"])


def login_is_recent(*, request) -> bool:
    """A sign-in within ACCOUNT_REAUTHENTICATION_TIMEOUT seconds, with the user's second factor when
    they have one (SECURITY.md, "Accounts and the login": approving, rotating, changing factors)."""
    import time

    from allauth.account import app_settings as account_settings

    since = time.time() - account_settings.REAUTHENTICATION_TIMEOUT
    amr = session_amr(request=request, since=since)
    if user_has_second_factor(user=request.user):
        return bool({"otp", "hwk", "mfa"} & set(amr))
    return bool(amr)


def totp_code_already_used(*, user, code: str) -> bool:
    """Whether `code` is right for `user`'s authenticator app now but was used within its period
    (allauth's used-code store, RFC 6238 §5.2): to say so rather than "Incorrect code"."""
    # Deferred as this module's other allauth reads (authenticator_list_for_user): models, not at
    # import time of the URLconf.
    from allauth.mfa.models import Authenticator
    from allauth.mfa.totp.internal.auth import TOTP, validate_totp_code
    from allauth.mfa.utils import decrypt
    from django.core.cache import cache

    authenticator = Authenticator.objects.filter(user_id=user.pk, type=Authenticator.Type.TOTP).first()
    if authenticator is None or not code:
        return False
    if not validate_totp_code(decrypt(authenticator.data["secret"]), code):
        return False
    return cache.get(TOTP(authenticator)._get_used_cache_key(code)) is not None


def upstream_reauthentication_url(*, user) -> str | None:
    """The login URL of the identity provider `user` is linked to, asking it to sign them in again."""
    from allauth.socialaccount.models import SocialAccount
    from django.urls import reverse
    from django.utils.http import urlencode

    account = SocialAccount.objects.filter(user=user, provider__in=_provider_slugs()).order_by("pk").first()
    if account is None:
        return None
    # OpenID Connect Core §3.1.2.1: prompt=login and max_age=0 make the provider ask again.
    query = urlencode({"process": "login", "auth_params": "prompt=login&max_age=0"})
    return f"{reverse('openid_connect_login', kwargs={'provider_id': account.provider})}?{query}"


def _provider_slugs() -> list[str]:
    from accounts.models import IdentityProvider

    return list(IdentityProvider.objects.values_list("slug", flat=True))


def email_is_verified(*, user, email: str) -> bool:
    """Whether `user` proved `email` (allauth's EmailAddress, verified)."""
    from allauth.account.models import EmailAddress

    return EmailAddress.objects.filter(user=user, email__iexact=email, verified=True).exists()


# --- organizations' domains (IdentityProvider.enforce) ---------------------------------------------


def email_domain(email: str) -> str:
    return email.rpartition("@")[2].strip().lower() if "@" in email else ""


def enforcing_provider_for_email(*, email: str):
    """The identity provider that is the only way in for `email`'s domain (`--enforce`), if any."""
    from accounts.models import IdentityProvider

    domain = email_domain(email)
    if not domain:
        return None
    for provider in IdentityProvider.objects.filter(enforce=True).order_by("pk"):
        if domain in provider.domains:
            return provider
    return None


def enforcing_provider_for_user(*, user):
    """The provider enforced for any of `user`'s addresses (their account email or another one)."""
    from allauth.account.models import EmailAddress

    addresses = {user.email or ""} | set(EmailAddress.objects.filter(user=user).values_list("email", flat=True))
    for address in sorted(a for a in addresses if a):
        provider = enforcing_provider_for_email(email=address)
        if provider is not None:
            return provider
    return None


def upstream_amr_of(sociallogin) -> list[str]:
    """The `amr` the upstream provider put in its ID token (RFC 8176), strings only."""
    claims = (sociallogin.account.extra_data or {}).get("id_token") or {}
    amr = claims.get("amr") if isinstance(claims, dict) else None
    return sorted({value for value in amr if isinstance(value, str)}) if isinstance(amr, list) else []


def provider_refusing_direct_login(*, user):
    """The enforced provider that is `user`'s only way in, refusing a sign-in here (a password or a
    passkey) — None for other accounts, and for superusers with a second factor, who keep a way in
    that does not depend on the provider (docs/accounts.md, "Enforced domains")."""
    provider = enforcing_provider_for_user(user=user)
    if provider is None or (user.is_superuser and user_has_second_factor(user=user)):
        return None
    return provider
