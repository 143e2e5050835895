"""django-allauth's internal parts accounts/ relies on, each pinned (as tests/test_private_framework_apis.py
does for Django's and DOT's): an upgrade that moves or changes one turns this file red first.

- the session's record of how the user signed in (accounts.selectors, accounts.adapter.record_upstream_amr);
- suspending a POST until the user re-authenticates (accounts.middleware._suspend);
- recording a second factor used (accounts.services.session_factor_set_up_record);
- marking the code typed at an authenticator app's activation used (accounts.forms.ActivateTOTPForm);
- ending a user's sessions (accounts.views.SignOutEverywhereView);
- the relying party server every passkey ceremony asks for (accounts.passkeys.passkey_server);
- the authenticator app's used-code store (accounts.selectors.totp_code_already_used).
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
