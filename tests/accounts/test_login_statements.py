"""A password login costs the same statements whatever the number of the person's live sessions
(issue 41: allauth.usersessions took three per session at each sign-in), and what the session
record is for still holds: the session list shows the live sessions, "Sign out everywhere" ends
them all (accounts.services.user_session_record)."""

from datetime import timedelta

from allauth.usersessions.models import UserSession
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.services import user_session_record
from tests.accounts.helpers import log_in

# The bench's bound on a password login POST (docs/performance.md, scenario 9), the one this test
# holds on the statements the server sends. The suite's test transaction turns each atomic block
# into a SAVEPOINT and its RELEASE, which a served request sends as BEGIN and COMMIT: not counted.
LOGIN_STATEMENTS_BOUND = 20


def _login_statements(identifier: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        _, answer = log_in(identifier)
    assert answer.status_code == 302 and not answer["Location"].startswith("/accounts/"), answer
    return [
        query["sql"] for query in captured.captured_queries if not query["sql"].startswith(("SAVEPOINT", "RELEASE"))
    ]


def _live_sessions(user) -> int:
    return UserSession.objects.filter(user=user).count()


def test_a_login_takes_the_same_statements_with_one_live_session_and_with_fifty(end_user):
    log_in("enduser")
    assert _live_sessions(end_user) == 1
    with_one = _login_statements("enduser")
    for _ in range(48):
        log_in("enduser")
    assert _live_sessions(end_user) == 50
    with_fifty = _login_statements("enduser")
    assert len(with_fifty) == len(with_one) <= LOGIN_STATEMENTS_BOUND, "\n".join(with_fifty)
    assert _live_sessions(end_user) == 51  # every one still live, and recorded


def test_the_sessions_that_ended_are_forgotten_at_the_next_sign_in(end_user):
    left, _ = log_in("enduser")
    expired, _ = log_in("enduser")
    kept, _ = log_in("enduser")
    left.post("/accounts/logout/")
    Session.objects.filter(session_key=expired.session.session_key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    current, _ = log_in("enduser")
    recorded = set(UserSession.objects.filter(user=end_user).values_list("session_key", flat=True))
    assert recorded == {kept.session.session_key, current.session.session_key}


def test_a_session_signed_in_again_keeps_one_record(end_user, rf):
    # allauth's receiver got or updated the record of the session's key; the one statement does too.
    browser, _ = log_in("enduser")
    request = rf.get("/", HTTP_USER_AGENT="Another browser")
    request.session = browser.session
    user_session_record(request=request, user=end_user)
    (record,) = UserSession.objects.filter(user=end_user)
    assert record.session_key == browser.session.session_key and record.user_agent == "Another browser"


def test_the_session_list_shows_each_live_session(end_user, django_user_model):
    phone, _ = log_in("enduser")
    tablet, _ = log_in("enduser")
    laptop, _ = log_in("enduser")
    tablet.post("/accounts/logout/")
    page = laptop.get("/accounts/sessions/")
    assert page.status_code == 200
    listed = {session.session_key for session in page.context["sessions"]}
    assert listed == {phone.session.session_key, laptop.session.session_key}
    assert page.context["session_count"] == 2


def test_sign_out_everywhere_ends_fifty_sessions(end_user):
    devices = [log_in("enduser")[0] for _ in range(50)]
    keys = [device.session.session_key for device in devices]
    answer = devices[-1].post("/accounts/security/sign-out-everywhere/")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    assert not Session.objects.filter(session_key__in=keys).exists()
    assert not UserSession.objects.filter(user=end_user).exists()
    assert all(device.get("/settings/apps/").status_code == 302 for device in devices[::7])


def test_another_account_keeps_its_sessions(end_user, django_user_model):
    other = django_user_model.objects.create_user(username="other", password="correct-horse-battery-staple")
    theirs = Client()
    log_in("other", browser=theirs)
    for _ in range(3):
        log_in("enduser")
    assert _live_sessions(other) == 1
    assert theirs.get("/settings/apps/").status_code == 200
