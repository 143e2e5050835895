"""The mail the front door sends (accounts.emails, through accounts.adapter; oauthclients.emails):

- every link in it is built from OAUTH_ISSUER, whatever `Host` the request carried (issue 38,
  finding 8: `Host: 127.0.0.1:6666` passed ALLOWED_HOSTS, ports are not compared, and the emailed
  reset link pointed there);
- a mail server that refuses never turns the page into a 500 (issue 38, "Also": sign-up with
  `EMAIL_USE_TLS=1` against a server without STARTTLS answered 500 and left an unverified account
  behind): the account is made whole and the page says the mail could not be sent, with the way to
  send it again; a password reset's page says nothing either way (no address told apart).
"""

import re
from types import SimpleNamespace

import pytest
from allauth.account.adapter import get_adapter
from allauth.account.models import EmailAddress
from allauth.core import context as allauth_context
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.core import mail
from django.core.cache import cache
from django.test import Client, RequestFactory

from accounts.models import SelfSignup
from tests.accounts.smtp_sink import smtp_sink
from tests.factories import PASSWORD, make_client
from tests.security.credentials import digests_on_page

ISSUER = "http://testserver"  # config/settings_test.py
FORGED = "127.0.0.1:6666"
NEW_PASSWORD = "an-entirely-new-passphrase-42"
SIGN_UP = {"username": "newbie", "email": "newbie@example.com", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}


@pytest.fixture(autouse=True)
def _no_earlier_verification_mails():
    # allauth sends one verification mail per address every few minutes, counted in the in-process
    # cache; addresses come again from test to test: each test starts from none.
    cache.clear()


def forged() -> Client:
    """A browser whose requests carry the attacker's Host header (it passes ALLOWED_HOSTS)."""
    return Client(HTTP_HOST=FORGED)


def links(message) -> list[str]:
    return re.findall(r"https?://\S+", message.body)


def assert_from_the_issuer(message) -> None:
    text = f"{message.subject}\n{message.body}"
    assert "6666" not in text and "127.0.0.1" not in text, text
    assert links(message) and all(link.startswith(f"{ISSUER}/") for link in links(message)), links(message)


# --- links from the issuer (finding 8) --------------------------------------------------------------


def test_a_reset_link_asked_for_with_a_forged_host_points_at_the_issuer(end_user):
    answer = forged().post("/accounts/password/reset/", {"email": "enduser@example.com"})
    assert answer.status_code == 302
    (message,) = mail.outbox
    assert_from_the_issuer(message)
    # It is the working link, on the issuer: it opens the form that sets the password.
    (link,) = [link for link in links(message) if "/password/reset/key/" in link]
    opened = Client().get(link.removeprefix(ISSUER))
    assert opened.status_code == 302 and opened["Location"].endswith("-set-password/")


def test_a_confirmation_link_asked_for_with_a_forged_host_points_at_the_issuer(end_user):
    browser = forged()
    browser.force_login(end_user)
    browser.post("/accounts/email/", {"action_send": "", "email": "enduser@example.com"})
    (message,) = mail.outbox
    assert_from_the_issuer(message)
    (link,) = [link for link in links(message) if "/confirm-email/" in link]
    assert Client().post(link.removeprefix(ISSUER)).status_code == 302
    assert EmailAddress.objects.get(user=end_user).verified


def test_a_sign_up_with_a_forged_host_gets_its_confirmation_link_from_the_issuer(db, settings):
    settings.OAUTH_SIGNUP = "open"
    assert forged().post("/accounts/signup/", SIGN_UP).status_code == 302
    (message,) = mail.outbox
    assert_from_the_issuer(message)


def test_every_other_mail_names_the_issuer_too(end_user, settings):
    # allauth's other mails with a link (sign-up for an unknown address, "an account already exists")
    # and its notifications (their footer names the site): none carries the forged host.
    settings.ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS = True
    settings.ACCOUNT_EMAIL_NOTIFICATIONS = True
    forged().post("/accounts/password/reset/", {"email": "nobody@example.com"})
    browser = forged()
    browser.force_login(end_user)
    browser.post(
        "/accounts/password/change/", {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    )
    request = RequestFactory(HTTP_HOST=FORGED).get("/accounts/signup/")
    request.session, request.user = SimpleNamespace(), end_user
    with allauth_context.request_context(request):
        get_adapter(request).send_account_already_exists_mail("enduser@example.com")
    subjects = sorted(message.subject for message in mail.outbox)
    assert len(subjects) == 3, subjects
    for message in mail.outbox:
        # (A notification names the address the change came from, 127.0.0.1 here: the client's, not a link.)
        assert FORGED not in f"{message.subject}\n{message.body}"
        assert all(link.startswith(f"{ISSUER}/") for link in links(message)), links(message)
    assert all(subject.startswith("[testserver] ") for subject in subjects)


def test_a_review_email_sent_from_an_admin_page_with_a_forged_host_points_at_the_issuer(
    owner, reviewer, django_capture_on_commit_callbacks
):
    app = make_client(owner).client
    staff = forged()
    staff.force_login(reviewer)
    url = f"/admin/oauthclients/oauthclient/{app.pk}/approve/"
    with django_capture_on_commit_callbacks(execute=True):
        done = staff.post(url, digests_on_page(staff.get(url)))
    assert done.status_code == 302
    (message,) = mail.outbox
    assert_from_the_issuer(message)


# --- a mail server that refuses ("Also") ----------------------------------------------------------------


@pytest.fixture
def refusing_mail_server(settings):
    """Django's SMTP backend against a local sink without STARTTLS, EMAIL_USE_TLS on (the default):
    every mail fails (smtplib's SMTPNotSupportedError), as the red team's did."""
    with smtp_sink() as (port, received):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS = "127.0.0.1", port, True
        yield received


def warnings_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def confirmation_path(message) -> str:
    return re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", message.get_payload()).group(1)


def test_a_sign_up_whose_mail_is_refused_makes_the_account_whole_and_says_so(
    db, settings, refusing_mail_server, caplog
):
    settings.OAUTH_SIGNUP = "open"
    browser = Client()
    answer = browser.post("/accounts/signup/", SIGN_UP)
    # Before: a 500, and an account left behind the error.
    assert (answer.status_code, answer["Location"]) == (302, "/accounts/confirm-email/")
    user = get_user_model().objects.get(username="newbie")
    assert SelfSignup.objects.filter(user=user).exists()
    assert EmailAddress.objects.filter(user=user, email="newbie@example.com", verified=False, primary=True).exists()
    assert "_auth_user_id" not in browser.session  # a self sign-up signs in once it has proved its address
    said = " ".join(warnings_of(answer))
    assert "newbie@example.com could not be sent" in said and "sent to" not in said
    assert 'href="/accounts/login/">Sign in to have it sent again' in said  # not Email addresses: nobody is signed in
    assert refusing_mail_server == []
    assert "STARTTLS" in caplog.text and "/confirm-email/" not in caplog.text  # logged without its link
    # The page says it was not sent, and how to have it sent again; never that it was sent.
    page = browser.get(answer["Location"]).content.decode()
    assert "We could not send you the email" in page and 'href="/accounts/login/"' in page
    assert "We have sent" not in page
    # Once the mail server is fixed, signing in sends it (the refused mail spent none of allauth's
    # limit of one per address every few minutes), and the page says it went.
    settings.EMAIL_USE_TLS = False
    signed_in = browser.post("/accounts/login/", {"login": "newbie", "password": NEW_PASSWORD})
    assert (signed_in.status_code, signed_in["Location"]) == (302, "/accounts/confirm-email/")
    assert "_auth_user_id" not in browser.session
    (sent,) = refusing_mail_server
    assert sent["To"] == "newbie@example.com"
    assert warnings_of(signed_in) == ["Confirmation email sent to newbie@example.com."]
    page = browser.get("/accounts/confirm-email/").content.decode()
    assert "We have sent you an email" in page and "We could not send" not in page
    # A second sign-in at once sends nothing more (allauth's limit), and the page still says the truth.
    browser.post("/accounts/login/", {"login": "newbie", "password": NEW_PASSWORD})
    assert len(refusing_mail_server) == 1
    assert "We have sent you an email" in browser.get("/accounts/confirm-email/").content.decode()
    # The account is whole: the link proves the address, and the password then signs in.
    Client().post(confirmation_path(sent))
    proved = Client()
    done = proved.post("/accounts/login/", {"login": "newbie", "password": NEW_PASSWORD})
    assert done.status_code == 302 and proved.session["_auth_user_id"] == str(user.pk)


def test_a_refused_mail_at_a_sign_up_naming_a_taken_address_gets_the_same_pages(
    db, settings, refusing_mail_server, end_user
):
    # Enumeration prevention holds when the mail fails: the owner's "someone tried to sign up" mail
    # and a newcomer's confirmation fail alike, and the answers differ only by the address.
    settings.OAUTH_SIGNUP = "open"
    answers = []
    for username, email in (("someone", "enduser@example.com"), ("newbie", "newbie@example.com")):
        browser = Client()
        answer = browser.post("/accounts/signup/", {**SIGN_UP, "username": username, "email": email})
        page = browser.get(answer["Location"]).content.decode()
        answers.append(
            (answer.status_code, answer["Location"], [said.replace(email, "ADDRESS") for said in warnings_of(answer)])
        )
        assert "We could not send you the email" in page
    assert answers[0] == answers[1]
    assert refusing_mail_server == [] and not get_user_model().objects.filter(username="someone").exists()
    # Neither failure spent allauth's one mail per address every few minutes: once the server is
    # fixed, the owner's mail goes at once too.
    settings.EMAIL_USE_TLS = False
    Client().post("/accounts/signup/", {**SIGN_UP, "username": "someone", "email": "enduser@example.com"})
    assert [message["To"] for message in refusing_mail_server] == ["enduser@example.com"]


def test_resending_or_adding_an_address_with_a_refusing_server_says_so(end_user, refusing_mail_server):
    browser = Client()
    browser.force_login(end_user)
    resend = browser.post("/accounts/email/", {"action_send": "", "email": "enduser@example.com"})
    assert resend.status_code == 302
    assert any("could not be sent" in said for said in warnings_of(resend))
    added = browser.post("/accounts/email/", {"action_add": "", "email": "second@example.com"})
    assert added.status_code == 302
    assert EmailAddress.objects.filter(user=end_user, email="second@example.com", verified=False).exists()
    assert any("second@example.com could not be sent" in said for said in warnings_of(added))


def test_a_password_reset_with_a_refusing_server_answers_as_for_an_unknown_address(
    end_user, refusing_mail_server, caplog
):
    known = Client().post("/accounts/password/reset/", {"email": "enduser@example.com"})
    unknown = Client().post("/accounts/password/reset/", {"email": "nobody@example.com"})
    done = (302, "/accounts/password/reset/done/")
    assert (known.status_code, known["Location"]) == (unknown.status_code, unknown["Location"]) == done
    assert warnings_of(known) == warnings_of(unknown) == []
    assert "Could not send the account/email/password_reset_key email" in caplog.text
    assert "/password/reset/key/" not in caplog.text


def test_a_local_sink_takes_the_mail_with_email_use_tls_off(end_user, settings):
    # docs/configuration.md: a local mail catcher speaks no STARTTLS; EMAIL_USE_TLS=0 for it.
    with smtp_sink() as (port, received):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS = "127.0.0.1", port, False
        Client().post("/accounts/password/reset/", {"email": "enduser@example.com"})
    (message,) = received
    assert message["To"] == "enduser@example.com" and f"{ISSUER}/accounts/password/reset/key/" in message.get_payload()
