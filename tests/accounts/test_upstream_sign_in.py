# ruff: noqa: F811 - the fixture imported from tests/browser/upstream_provider.py is named as an argument
"""Signing in through an organization's provider nobody here wrote: panva's `oidc-provider` (npm,
tests/browser/upstream, run by tests/browser/upstream_provider.py; it requires PKCE of every
client), without a browser: our pages through Django's test client, the provider's through
`requests`, the back channel (discovery, token, userinfo, keys) for real on loopback.

- Every authorization request carries PKCE (S256) and a nonce, and the ID token answers it.
- An address someone typed and never proved catches nobody's sign-in: the person the provider
  vouches for gets their own account with it, the claimant loses it, audited; neither the
  claimant's session nor their password reaches the single sign-on's account.
- A userinfo answer naming another subject than the ID token is refused (OpenID Connect Core §5.3.2).
- An enforced account cannot leave its organization's provider from its own pages.
- An account that signs in only through its provider changes its second factors only after the
  provider has asked it again (prompt=login, max_age=0; the ID token's auth_time says it did).
"""

import re
import time
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from allauth.account.internal.flows.login import AUTHENTICATION_METHODS_SESSION_KEY
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client, RequestFactory

from accounts.models import AccountAuditAction, AccountAuditEvent, SelfSignup
from accounts.selectors import login_is_recent
from accounts.services import identity_provider_add
from tests.browser.upstream_provider import Upstream, upstream_package  # noqa: F401 - a fixture
from tests.factories import PASSWORD, make_user

OURS = "http://testserver"
CALLBACK = f"{OURS}/accounts/oidc/acme-sso/login/callback/"
LOGIN = "/accounts/oidc/acme-sso/login/"
SECRET = "upstream-client-secret-for-the-test-0123456789"
TIMEOUT = 10
ACCOUNTS = {
    # The organization's chief executive, whose address the provider vouches for.
    "ceo": {"email": "ceo@acme.example", "email_verified": True, "amr": ["pwd"]},
    # Someone at the provider whose address there is not verified.
    "unsure": {"email": "ceo@acme.example", "email_verified": False, "amr": ["pwd"]},
    # A provider misbehaving: its userinfo names the chief executive, its ID token this login.
    "liar": {"email": "ceo@acme.example", "email_verified": True, "amr": ["pwd"], "userinfo_sub": "ceo"},
}


@pytest.fixture(scope="module")
def upstream(upstream_package):
    client = {"client_id": "scheduling", "client_secret": SECRET, "redirect_uris": [CALLBACK]}
    server = Upstream(upstream_package, clients=[client], accounts=ACCOUNTS)
    try:
        yield server
    finally:
        server.close()


def acme(upstream, *, enforce: bool):
    return identity_provider_add(
        name="Acme SSO",
        issuer=upstream.issuer,
        client_id="scheduling",
        client_secret=SECRET,
        domains=["acme.example"],
        enforce=enforce,
    )


@pytest.fixture
def open_acme(upstream, db):
    return acme(upstream, enforce=False)


@pytest.fixture
def enforced_acme(upstream, db):
    return acme(upstream, enforce=True)


class Person:
    """One person's browser: our pages through Django's test client, the provider's through requests."""

    def __init__(self):
        self.browser = Client()
        self.at_provider = requests.Session()
        self.asked = 0  # how many times the provider showed its login form

    def start(self, path: str = LOGIN) -> str:
        """ "Continue with Acme SSO" (a POST): the authorization request we send the browser to."""
        answer = self.browser.post(path, {"process": "login"} if "?" not in path else {})
        assert answer.status_code == 302, answer.content[:300]
        return answer["Location"]

    def _follow(self, answer):
        while answer.is_redirect:
            location = urljoin(answer.url, answer.headers["Location"])
            if location.startswith(OURS + "/"):
                return location
            answer = self.at_provider.get(location, allow_redirects=False, timeout=TIMEOUT)
        return answer

    def at_upstream(self, authorize_url: str, login: str) -> str:
        """At the provider: its login form as `login` if it asks; the URL it sends the browser back to."""
        answer = self._follow(self.at_provider.get(authorize_url, allow_redirects=False, timeout=TIMEOUT))
        if isinstance(answer, str):
            return answer  # it remembered the person
        assert answer.status_code == 200 and "/interaction/" in answer.url, answer.text[:300]
        self.asked += 1
        back = self._follow(
            self.at_provider.post(answer.url + "/login", data={"login": login}, allow_redirects=False, timeout=TIMEOUT)
        )
        assert isinstance(back, str), back.text[:300]
        return back

    def back(self, url: str):
        parts = urlsplit(url)
        return self.browser.get(f"{parts.path}?{parts.query}")

    def sign_in(self, login: str, path: str = LOGIN):
        return self.back(self.at_upstream(self.start(path), login))

    @property
    def user(self):
        user_id = self.browser.session.get("_auth_user_id")
        return get_user_model().objects.get(pk=user_id) if user_id else None


def _signed_in(person: Person, login: str = "ceo"):
    answer = person.sign_in(login)
    assert answer.status_code == 302, answer.content.decode()[:500]
    assert person.user is not None
    return person.user


# --- finding 10: PKCE, a nonce, one subject ---------------------------------------------------


def test_every_authorization_request_carries_pkce_s256_and_a_nonce_that_the_id_token_answers(open_acme, upstream):
    person = Person()
    first, second = parse_qs(urlsplit(person.start()).query), parse_qs(urlsplit(Person().start()).query)
    assert first["code_challenge_method"] == ["S256"] and len(first["code_challenge"][0]) == 43
    assert len(first["nonce"][0]) >= 43 and first["nonce"] != second["nonce"]  # one per sign-in
    assert first["code_challenge"] != second["code_challenge"]
    # The provider requires PKCE (examples/idjag_provider/provider.mjs, run by
    # tests/browser/upstream_provider.py); the sign-in completes, the ID token carrying the nonce we
    # sent (accounts.upstream; a wrong one: test_identity_providers.py).
    user = _signed_in(person)
    link = SocialAccount.objects.get(user=user)
    assert link.uid == "ceo" and link.extra_data["id_token"]["nonce"]


def test_a_userinfo_naming_another_subject_than_the_id_token_is_refused(open_acme, upstream):
    victim = make_user("victim")
    SocialAccount.objects.create(user=victim, provider="acme-sso", uid="ceo")
    person = Person()
    answer = person.sign_in("liar")
    # allauth's "sign-in failed" page (401), nobody signed in.
    assert answer.status_code == 401 and "_auth_user_id" not in person.browser.session
    assert "Third-Party Login Failure" in answer.content.decode()
    # Nothing made, nothing linked, the victim's link untouched.
    assert list(SocialAccount.objects.values_list("uid", "user_id")) == [("ceo", victim.pk)]
    assert get_user_model().objects.count() == 1


# --- finding 2: an account someone else made catches the organization's sign-in ----------------


def _claimed_without_proof(email: str):
    """An account that typed `email` and never proved it: as a sign-up made it before sign-ups had
    to prove their address, or an administrator without checking it."""
    squatter = make_user("attacker")
    squatter.email = email
    squatter.save()
    EmailAddress.objects.create(user=squatter, email=email, verified=False, primary=True)
    return squatter


def test_a_squatters_session_and_password_never_reach_the_single_sign_ons_account(open_acme, upstream):
    squatter = _claimed_without_proof("ceo@acme.example")
    attacker = Client()
    assert attacker.post("/accounts/login/", {"login": "attacker", "password": PASSWORD}).status_code == 302

    # The chief executive signs in through the provider, which vouches for the address.
    ceo = _signed_in(Person())
    assert ceo.pk != squatter.pk
    assert SocialAccount.objects.get(provider="acme-sso", uid="ceo").user == ceo
    assert EmailAddress.objects.get(email="ceo@acme.example").user == ceo
    assert EmailAddress.objects.get(email="ceo@acme.example").verified
    # The squatter lost the address it never proved, audited.
    squatter.refresh_from_db()
    assert squatter.email == "" and not EmailAddress.objects.filter(user=squatter).exists()
    event = AccountAuditEvent.objects.get(action=AccountAuditAction.UNPROVEN_ADDRESS_RELEASED)
    assert (event.user, event.detail) == (squatter, {"provider": "acme-sso", "domain": "acme.example"})
    # The attacker's session is still the attacker's own account, nothing of the CEO's in it.
    assert attacker.session["_auth_user_id"] == str(squatter.pk)
    assert "ceo@acme.example" not in attacker.get("/accounts/email/").content.decode()
    # Their password reaches no account by the address, and only their own by their name.
    by_address = Client()
    by_address.post("/accounts/login/", {"login": "ceo@acme.example", "password": PASSWORD})
    assert "_auth_user_id" not in by_address.session
    by_name = Client()
    by_name.post("/accounts/login/", {"login": "attacker", "password": PASSWORD})
    assert by_name.session["_auth_user_id"] == str(squatter.pk)
    # The CEO's next sign-in lands in the same account, by its link.
    assert _signed_in(Person()).pk == ceo.pk


def test_a_sign_up_squatting_the_address_is_not_signed_in_and_loses_it_to_the_provider(open_acme, upstream, settings):
    settings.OAUTH_SIGNUP = "open"
    attacker = Client()
    form = {"username": "attacker", "email": "ceo@acme.example", "password1": "pw-" + PASSWORD}
    signed_up = attacker.post("/accounts/signup/", form | {"password2": form["password1"]})
    assert signed_up.status_code == 302 and "_auth_user_id" not in attacker.session  # must prove it first
    squatter = get_user_model().objects.get(username="attacker")
    assert SelfSignup.objects.filter(user=squatter).exists()

    ceo = _signed_in(Person())
    assert ceo.pk != squatter.pk and EmailAddress.objects.get(email="ceo@acme.example").user == ceo
    # The confirmation link the attacker was mailed now confirms nothing (its address row is gone).
    link = re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", mail.outbox[0].body).group(1)
    Client().post(link)
    assert EmailAddress.objects.filter(email="ceo@acme.example").get().user == ceo
    late = Client()
    late.post("/accounts/login/", {"login": "attacker", "password": form["password1"]})
    assert late.session.get("_auth_user_id") != str(ceo.pk)


def test_an_address_the_provider_does_not_vouch_for_is_refused_and_stays_with_its_holder(open_acme, upstream):
    squatter = _claimed_without_proof("ceo@acme.example")
    person = Person()
    answer = person.sign_in("unsure")  # email_verified: false at the provider
    assert answer.status_code == 403 and person.user is None
    assert not SocialAccount.objects.exists()
    assert EmailAddress.objects.get(email="ceo@acme.example").user == squatter
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.UPSTREAM_LINK_REFUSED, user=squatter).exists()


def test_an_account_that_proved_the_address_is_the_one_the_provider_signs_in(open_acme, upstream):
    holder = make_user("chief")
    EmailAddress.objects.create(user=holder, email="ceo@acme.example", verified=True, primary=True)
    assert _signed_in(Person()).pk == holder.pk
    assert AccountAuditEvent.objects.filter(action=AccountAuditAction.UPSTREAM_ACCOUNT_LINKED, user=holder).exists()


def test_with_enforce_a_refused_sign_up_leaves_nothing_behind(enforced_acme, upstream, settings):
    settings.OAUTH_SIGNUP = "open"
    form = {"username": "attacker", "email": "CEO@acme.example", "password1": "pw-" + PASSWORD}
    refused = Client().post("/accounts/signup/", form | {"password2": form["password1"]})
    assert refused.status_code == 200 and "Your organization signs you in through Acme SSO" in refused.content.decode()
    assert not get_user_model().objects.exists() and not EmailAddress.objects.exists()
    assert _signed_in(Person()).email == "ceo@acme.example"


# --- finding 5: an enforced account cannot leave its provider ---------------------------------


def test_an_enforced_account_cannot_leave_its_provider_from_its_own_pages(enforced_acme, upstream):
    person = Person()
    employee = _signed_in(person)
    pages = person.browser
    # A password: refused, with a page that says why (the page, and its POST).
    for answer in (
        pages.get("/accounts/password/set/"),
        pages.post("/accounts/password/set/", {"password1": "pw-" + PASSWORD, "password2": "pw-" + PASSWORD}),
    ):
        assert answer.status_code == 403
        assert "Your organization signs you in through Acme SSO" in answer.content.decode()
    employee.refresh_from_db()
    assert not employee.has_usable_password()
    # A personal address may be added and proved; it does not become primary, the organization's stays.
    assert pages.post("/accounts/email/", {"action_add": "", "email": "me@home.example"}).status_code == 302
    link = re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", mail.outbox[-1].body).group(1)
    pages.post(link)
    assert EmailAddress.objects.get(email="me@home.example").verified
    primary = pages.post("/accounts/email/", {"action_primary": "", "email": "me@home.example"})
    removed = pages.post("/accounts/email/", {"action_remove": "", "email": "ceo@acme.example"})
    assert (primary.status_code, removed.status_code) == (403, 403)
    assert EmailAddress.objects.get(email="ceo@acme.example", user=employee).primary
    # Nor does it remove its link to the provider.
    link_id = SocialAccount.objects.get(user=employee).pk
    pages.post("/accounts/3rdparty/", {"account": link_id})
    assert SocialAccount.objects.filter(pk=link_id).exists()
    refusals = AccountAuditEvent.objects.filter(action=AccountAuditAction.ENFORCED_STEP_REFUSED, user=employee)
    assert sorted(event.detail["step"] for event in refusals) == [
        "make_primary",
        "remove_address",
        "set_password",
        "set_password",
    ]
    # Its personal address is no way in either: typing it sends nobody anywhere but a failed login.
    other = Client()
    other.post("/accounts/login/", {"login": "me@home.example", "password": "pw-" + PASSWORD})
    assert "_auth_user_id" not in other.session


# --- Also: upstream-only accounts change their factors after signing in there again ---------------


def _age(person: Person, seconds: int) -> None:
    session = person.browser.session
    session[AUTHENTICATION_METHODS_SESSION_KEY] = [
        {**record, "at": record["at"] - seconds}
        | ({"upstream_auth_time": record["upstream_auth_time"] - seconds} if "upstream_auth_time" in record else {})
        for record in session[AUTHENTICATION_METHODS_SESSION_KEY]
    ]
    session.save()


def test_an_upstream_only_account_signs_in_at_its_provider_again_before_changing_its_factors(open_acme, upstream):
    person = Person()
    employee = _signed_in(person)
    assert not employee.has_usable_password()
    record = person.browser.session[AUTHENTICATION_METHODS_SESSION_KEY][-1]
    assert abs(record["upstream_auth_time"] - time.time()) < 60  # the ID token's auth_time, kept
    # Signed in minutes ago: setting up an authenticator app asks the provider again first.
    _age(person, 3600)
    asked = person.browser.get("/accounts/2fa/totp/activate/")
    assert asked.status_code == 302
    target = urlsplit(asked["Location"])
    assert target.path == LOGIN
    assert parse_qs(parse_qs(target.query)["auth_params"][0]) == {"prompt": ["login"], "max_age": ["0"]}
    assert parse_qs(target.query)["next"] == ["/accounts/2fa/totp/activate/"]
    # The provider remembers the person, yet asks again (prompt=login, max_age=0).
    authorize = person.start(asked["Location"])
    assert parse_qs(urlsplit(authorize).query)["prompt"] == ["login"]
    before = person.asked
    back = person.back(person.at_upstream(authorize, "ceo"))
    assert person.asked == before + 1
    assert back.status_code == 302 and back["Location"] == "/accounts/2fa/totp/activate/"
    assert person.browser.get("/accounts/2fa/totp/activate/").status_code == 200


@pytest.mark.parametrize(
    ("authenticated_ago", "linked", "recent"),
    [(10, True, True), (3600, True, False), (None, True, True), (10, False, False), (None, False, False)],
)
def test_a_sign_in_is_as_recent_as_the_providers_authentication(db, authenticated_ago, linked, recent):
    # The provider may sign the person in from a session of its own, long before (OpenID Connect
    # Core §2, auth_time): that sign-in is not a recent one here, however recent its arrival. And
    # an upstream sign-in counts only while the account still has that link (accounts.selectors):
    # once an administrator unlinks the provider, the session's record of it proves nothing.
    user = make_user("employee")
    if linked:
        SocialAccount.objects.create(user=user, provider="acme-sso", uid="employee")
    SocialAccount.objects.create(user=user, provider="acme-sso", uid="someone-else")  # not the one signed in with
    browser = Client()
    browser.force_login(user)
    session = browser.session
    record = {"method": "socialaccount", "at": time.time(), "provider": "acme-sso", "uid": "employee"}
    if authenticated_ago is not None:
        record["upstream_auth_time"] = int(time.time()) - authenticated_ago
    session[AUTHENTICATION_METHODS_SESSION_KEY] = [record]
    session.save()
    request = RequestFactory().get("/")
    request.session, request.user = browser.session, user
    assert login_is_recent(request=request) is recent
