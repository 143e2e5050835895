"""django-allauth's internal parts accounts/ relies on, each pinned (as tests/test_private_framework_apis.py
does for Django's and DOT's): an upgrade that moves or changes one turns this file red first.

- the session's record of how the user signed in (accounts.selectors, accounts.adapter.record_upstream_amr);
- suspending a POST until the user re-authenticates (accounts.middleware._suspend);
- ending a user's sessions (accounts.views.SignOutEverywhereView).
"""

import inspect

from allauth.account.internal.flows import login, logout, reauthentication
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
