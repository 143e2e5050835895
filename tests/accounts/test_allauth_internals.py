"""django-allauth's internal parts accounts/ relies on, each pinned (as tests/test_private_framework_apis.py
does for Django's and DOT's): an upgrade that moves or changes one turns this file red first.

- the session's record of how the user signed in (accounts.selectors, accounts.adapter.record_upstream_amr);
- suspending a POST until the user re-authenticates (accounts.middleware._suspend);
- recording a second factor used (accounts.services.session_factor_set_up_record);
- marking the code typed at an authenticator app's activation used (accounts.forms.ActivateTOTPForm);
- ending a user's sessions (accounts.views.SignOutEverywhereView);
- the upstream sign-in's PKCE verifier kept in allauth's state, where accounts.upstream derives the
  nonce from it and accounts.socialadapter checks it; a provider class's `package` naming its URLs;
- the email verification stage accounts.adapter.AccountAdapter.get_login_stages replaces
  (accounts.stages), and the Login's `email_verification` it narrows;
- the relying party server every passkey ceremony asks for (accounts.passkeys.passkey_server);
- the authenticator app's used-code store (accounts.selectors.totp_code_already_used);
- allauth.usersessions' receiver of `user_logged_in`, which accounts.apps disconnects, and its
  record's fields (accounts.services.user_session_record writes them in one statement).
"""

import inspect
import time

from allauth.account.internal.flows import login, logout, reauthentication
from allauth.mfa.base.internal import flows as mfa_flows
from allauth.usersessions.internal.flows import sessions


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_authentication_records_live_under_this_session_key():
    assert login.AUTHENTICATION_METHODS_SESSION_KEY == "account_authentication_methods"
    assert parameters(login.get_authentication_records) == ["request", "user"]
    assert parameters(login.record_authentication) == ["request", "user", "method", "extra_data"]


def test_suspend_request_takes_the_request_and_the_url():
    assert parameters(reauthentication.suspend_request) == ["request", "redirect_to"]


def test_ending_sessions_and_logging_out():
    assert parameters(sessions.end_sessions) == ["request", "sessions"]
    assert parameters(logout.logout)[0] == "request"


def test_a_factor_used_is_recorded_as_mfa_with_its_type_and_id(end_user):
    from allauth.mfa.models import Authenticator
    from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
    from django.contrib.sessions.backends.db import SessionStore
    from django.test import RequestFactory

    assert parameters(mfa_flows.post_authentication) == ["request", "authenticator", "reauthenticated", "passwordless"]
    authenticator = RecoveryCodes.activate(end_user).instance
    request = RequestFactory().post("/")
    request.session, request.user = SessionStore(), end_user
    mfa_flows.post_authentication(request, authenticator, reauthenticated=True)
    (record,) = login.get_authentication_records(request, end_user)
    assert {key: value for key, value in record.items() if key != "at"} == {
        "method": "mfa",
        "id": authenticator.pk,
        "type": Authenticator.Type.RECOVERY_CODES,
        "reauthenticated": True,
    }
    authenticator.refresh_from_db()
    assert authenticator.last_used_at is not None


def test_a_code_marked_used_for_a_user_is_refused_by_their_authenticator_app(end_user, settings):
    """accounts.forms.ActivateTOTPForm marks the activation's code used through an unsaved
    Authenticator of the user: allauth's used-code key is the user and the code, not the
    authenticator, and its own ActivateTOTPForm.clean_code returns the code it checked."""
    import pyotp
    from allauth.mfa.models import Authenticator
    from allauth.mfa.totp.forms import ActivateTOTPForm
    from allauth.mfa.totp.internal.auth import TOTP
    from django.core.cache import cache

    assert parameters(TOTP._mark_code_used) == ["self", "code"]
    assert parameters(ActivateTOTPForm.clean_code) == ["self"]
    assert "return code" in inspect.getsource(ActivateTOTPForm.clean_code)
    settings.MFA_TOTP_TOLERANCE = 1
    cache.clear()
    secret = pyotp.random_base32()
    now = time.time()
    code, other = pyotp.TOTP(secret).at(now), pyotp.TOTP(secret).at(now + 30)  # this period's, the next
    assert TOTP(Authenticator(user=end_user, type=Authenticator.Type.TOTP))._mark_code_used(code) is True
    app = TOTP.activate(end_user, secret)
    assert app.validate_code(code) is False
    assert app.validate_code(other) is True


def test_the_pkce_verifier_reaches_the_state_and_the_nonce_the_authorization_request():
    """accounts.upstream.UpstreamProvider.get_pkce_params adds the nonce to what allauth's
    OAuth2Provider.redirect sends (all but `code_verifier`, which it stashes in the state as
    `pkce_code_verifier`; the callback hands that state to pre_social_login as sociallogin.state)."""
    from allauth.socialaccount.providers.oauth2 import views as oauth2_views
    from allauth.socialaccount.providers.oauth2.provider import OAuth2Provider

    redirect = inspect.getsource(OAuth2Provider.redirect)
    assert 'pkce_params.pop("code_verifier", None)' in redirect and "auth_params.update(pkce_params)" in redirect
    assert "pkce_code_verifier=code_verifier" in redirect
    assert parameters(OAuth2Provider.get_pkce_params) == ["self"]
    callback = inspect.getsource(oauth2_views.OAuth2CallbackView.dispatch)
    assert 'state.get("pkce_code_verifier")' in callback and "login.state = state" in callback
    assert "ProviderException" in callback and "PermissionDenied" in callback  # refusals are its error page


def test_a_provider_class_names_the_package_of_its_urls():
    from allauth.socialaccount.providers.base.provider import Provider

    assert 'getattr(cls, "package", None)' in inspect.getsource(Provider.get_package)


def test_the_email_verification_stage_we_replace_is_allauths():
    from allauth.account.adapter import DefaultAccountAdapter
    from allauth.account.stages import EmailVerificationStage

    assert "allauth.account.stages.EmailVerificationStage" in DefaultAccountAdapter().get_login_stages()
    handle = inspect.getsource(EmailVerificationStage.handle)
    assert "email_verification = login.email_verification" in handle


def test_the_sign_in_in_progress_names_its_account_as_the_limiter_reads_it(end_user):
    """plumbing.ratelimit.per_pending_account: the account whose second factor is being asked is the
    session's pending login, its `user_pk` the account's primary key as allauth writes it in URLs."""
    from allauth.account.internal import stagekit
    from allauth.account.models import Login
    from allauth.account.utils import url_str_to_user_pk

    from plumbing.ratelimit import PENDING_LOGIN_SESSION_KEY

    assert stagekit.LOGIN_SESSION_KEY == PENDING_LOGIN_SESSION_KEY
    stored = Login(user=end_user).serialize()
    assert url_str_to_user_pk(stored["user_pk"]) == end_user.pk


def test_allauth_keeps_its_security_state_in_the_default_cache():
    """docs/accounts.md, "Where security state is kept": allauth's used codes, its limits and the
    upstream ID tokens' jti use `django.core.cache.cache`, the default alias, and no other."""
    from allauth.core.internal import ratelimit
    from allauth.mfa.totp.internal import auth
    from allauth.socialaccount.internal import jwtkit
    from django.core.cache import cache

    for module in (auth, ratelimit, jwtkit):
        assert module.cache is cache
    assert cache._alias == "default"


def test_a_second_factors_code_check_counts_nothing_of_allauths_own(rf, end_user, settings):
    """allauth's only limit on codes is "login_failed" (mfa.base.internal.flows.check_rate_limit);
    config/settings.py turns it off: ours counts them (plumbing.ratelimit)."""
    from allauth.core import context
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    assert settings.ACCOUNT_RATE_LIMITS["login_failed"] is False
    store = caches["default"]
    assert isinstance(store, LocMemCache)  # the test settings': its entries can be listed
    store.clear()
    with context.request_context(rf.post("/accounts/2fa/authenticate/")):
        for _ in range(50):
            mfa_flows.check_rate_limit(end_user)()
    assert list(store._cache) == []
    settings.ACCOUNT_RATE_LIMITS = {"login_failed": "5/m/key"}  # the control: on, it counts there
    with context.request_context(rf.post("/accounts/2fa/authenticate/")):
        mfa_flows.check_rate_limit(end_user)
    assert any("login_failed" in key for key in store._cache)
    store.clear()


def test_every_passkey_ceremony_takes_its_server_from_get_server_which_ours_replaces():
    """accounts.apps puts accounts.passkeys.passkey_server (the issuer's origin, exactly) in place of
    allauth's module function get_server: every ceremony must call it by that name, and no other
    place build a relying party server of its own."""
    from allauth.mfa.webauthn.internal import auth

    from accounts.passkeys import passkey_server

    assert auth.get_server is passkey_server
    ceremonies = (
        auth.begin_registration,
        auth.complete_registration,
        auth.begin_authentication,
        auth.complete_authentication,
    )
    assert all("server = get_server()" in inspect.getsource(ceremony) for ceremony in ceremonies)
    source = inspect.getsource(auth)
    assert source.count("Fido2Server(") == 1 and source.count("= get_server()") == len(ceremonies)


def test_the_used_code_store_is_keyed_by_user_and_code(end_user):
    """accounts.selectors.totp_code_already_used reads allauth's used-code key and check."""
    from allauth.mfa.models import Authenticator
    from allauth.mfa.totp.internal import auth as totp

    assert parameters(totp.validate_totp_code) == ["secret", "code"]
    key = totp.TOTP(Authenticator(user=end_user, type=Authenticator.Type.TOTP))._get_used_cache_key("123 456")
    assert key == f"allauth.mfa.totp.used?user={end_user.pk}&code=123456"


def test_allauths_session_receiver_is_replaced_by_ours():
    from allauth.account.signals import user_logged_in
    from allauth.usersessions import signals as usersessions_signals
    from allauth.usersessions.models import UserSession

    from accounts import signals as ours

    receivers = [ref() for _key, ref, *_ in user_logged_in.receivers]
    assert usersessions_signals.on_user_logged_in not in receivers and ours._session_recorded in receivers
    assert parameters(UserSession.objects.purge_and_list) == ["user"]
    assert UserSession._meta.get_field("session_key").unique
    fields = {field.name for field in UserSession._meta.concrete_fields}
    assert fields == {"id", "user", "created_at", "ip", "last_seen_at", "session_key", "user_agent", "data"}
