"""Hand out every kind of credential through HTTP, as developers, users and apps get them, and
keep a ledger of each value so that storage and logs can be searched for it (SECURITY.md,
"Storage and logs").
"""

import json
import re
import secrets
from dataclasses import dataclass, field
from io import StringIO
from urllib.parse import quote

from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from oauthclients.models import OAuthClient
from signing.keys import signing_key_create
from tests.factories import PASSWORD
from tests.oauthclients.pages import registration_data, url
from tests.oauthflows.helpers import basic, exchange, get_code, me, pkce_pair, refresh, token_request

NEW_SECRET_IN_PAGE = re.compile(r'id="new-secret"[^>]*\svalue="(cs_[A-Za-z0-9_-]+)"')
SECRET_PREFIX = "cs_"


@dataclass
class Ledger:
    """Every credential value handed out (or presented) during a run, by label."""

    values: dict[str, str] = field(default_factory=dict)

    def add(self, label: str, value: str) -> str:
        assert isinstance(value, str) and len(value) >= 20, (label, value)
        assert label not in self.values, label
        self.values[label] = value
        return value

    def needles(self) -> dict[str, str]:
        """What must never be found: each value, its url-safe random part, and its Basic forms."""
        found: dict[str, str] = {}
        for label, value in self.values.items():
            found[label] = value
            if value.startswith(SECRET_PREFIX):
                found[f"{label} (random part)"] = value[len(SECRET_PREFIX) :]
        return found

    def leaks_in(self, text: str) -> list[str]:
        return sorted(label for label, needle in self.needles().items() if needle in text)


def basic_header(ledger: Ledger, label: str, client_id: str, secret: str) -> str:
    """An `Authorization: Basic` value; its base64 payload is a credential too."""
    header = basic(client_id, secret)
    ledger.add(f"{label} (Basic payload)", header.split(" ", 1)[1])
    return header


def logged_in(user) -> Client:
    http = Client()
    assert http.login(username=user.username, password=PASSWORD)
    return http


def register_client(developer: Client, **overrides) -> tuple[OAuthClient, str | None]:
    """Register through the developer page; return the client and the secret shown once (if any)."""
    before = set(OAuthClient.objects.values_list("pk", flat=True))
    response = developer.post(url("client_create"), registration_data(**overrides))
    assert response.status_code == 303, response.content[:500]
    client = OAuthClient.objects.exclude(pk__in=before).get()
    # Post/redirect/get: the secret is on the page the redirect leads to, once.
    page = developer.get(response["Location"])
    match = NEW_SECRET_IN_PAGE.search(page.content.decode())
    return client, (match.group(1) if match else None)


def approve_in_admin(reviewer: Client, client: OAuthClient) -> None:
    """The bulk action as an administrator uses it: the confirmation page, then Approve with its digests."""
    changelist = reverse("admin:oauthclients_oauthclient_changelist")
    data = {"action": "approve_clients", ACTION_CHECKBOX_NAME: [client.pk], "index": 0}
    confirmation = reviewer.post(changelist, data)
    assert confirmation.status_code == 200, confirmation.content[:500]
    response = reviewer.post(changelist, {**data, "post": "yes", **digests_on_page(confirmation)})
    assert response.status_code == 302, response.content[:500]
    client.refresh_from_db()
    assert client.is_approved


def digests_on_page(response) -> dict[str, str]:
    """The review digests an approval confirmation page carries, as its form would post them."""
    return dict(re.findall(r'name="(digest_\d+)" value="([0-9a-f]{64})"', response.content.decode()))


def generate_secret_on_page(developer: Client, client: OAuthClient) -> str:
    response = developer.post(url("client_secret_create", client))
    assert response.status_code == 303, response.content[:500]
    page = developer.get(response["Location"])
    return NEW_SECRET_IN_PAGE.search(page.content.decode()).group(1)


def tokens_of(response) -> tuple[str, str]:
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    return body["access_token"], body["refresh_token"]


def command(*args) -> dict:
    out = StringIO()
    call_command("oauthclient", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())  # one JSON object on one line


@dataclass
class Cast:
    developer: Client
    reviewer: Client
    browser: Client
    api: Client


@dataclass
class Issued:
    ledger: Ledger
    confidential: OAuthClient
    public: OAuthClient


def issue_everything(cast: Cast) -> Issued:
    """The happy paths: two secrets, a code, an exchanged pair, a refreshed pair, a PKCE exchange."""
    ledger = Ledger()
    api = cast.api

    # A developer registers a confidential client (secret shown once), a reviewer approves it,
    # and the developer generates a second secret for rotation.
    confidential, first = register_client(cast.developer, scopes=["PROFILE_READ", "PROFILE_WRITE", "BOOKING_READ"])
    ledger.add("secret shown at registration", first)
    approve_in_admin(cast.reviewer, confidential)
    second = ledger.add("second secret", generate_secret_on_page(cast.developer, confidential))

    # The user consents; the app exchanges the code (client_secret_post, form body).
    code = ledger.add("code", get_code(cast.browser, confidential, scope="PROFILE_READ PROFILE_WRITE"))
    access, refresh_token = tokens_of(exchange(api, confidential, code, secret=first))
    ledger.add("access token", access)
    ledger.add("refresh token", refresh_token)
    assert me(api, access).status_code == 200
    assert me(api, access, "patch", data={"name": "Ada"}, content_type="application/json").status_code == 200

    # Refresh with the second secret over HTTP Basic.
    auth = basic_header(ledger, "second secret", confidential.client_id, second)
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    access2, refresh2 = tokens_of(token_request(api, data, auth=auth))
    ledger.add("refreshed access token", access2)
    ledger.add("refreshed refresh token", refresh2)
    assert me(api, access2).status_code == 200

    # A JSON-bodied exchange of a second code.
    code_json = ledger.add("code exchanged as JSON", get_code(cast.browser, confidential, scope="PROFILE_READ"))
    access3, refresh3 = tokens_of(exchange(api, confidential, code_json, secret=second, as_json=True))
    ledger.add("access token from the JSON exchange", access3)
    ledger.add("refresh token from the JSON exchange", refresh3)

    # A public client with PKCE.
    public, none = register_client(
        cast.developer, name="Mobile Planner", kind="public", redirect_uris="http://127.0.0.1:9000/cb"
    )
    assert none is None
    approve_in_admin(cast.reviewer, public)
    verifier, challenge = pkce_pair()
    ledger.add("PKCE verifier", verifier)
    public_code = ledger.add(
        "public client's code", get_code(cast.browser, public, code_challenge=challenge, code_challenge_method="S256")
    )
    access4, refresh4 = tokens_of(exchange(api, public, public_code, verifier=verifier))
    ledger.add("public client's access token", access4)
    ledger.add("public client's refresh token", refresh4)
    access5, refresh5 = tokens_of(refresh(api, public, refresh4))
    ledger.add("public client's refreshed access token", access5)
    ledger.add("public client's refreshed refresh token", refresh5)

    # OpenID Connect: an ID token beside the pair, and userinfo read with the access token.
    signing_key_create(algorithm="RS256")
    openid_code = ledger.add("OpenID code", get_code(cast.browser, confidential, scope="openid profile", nonce="n"))
    answer = exchange(api, confidential, openid_code, secret=first).json()
    ledger.add("OpenID access token", answer["access_token"])
    ledger.add("OpenID refresh token", answer["refresh_token"])
    ledger.add("ID token", answer["id_token"])
    ledger.add("ID token signature", answer["id_token"].rsplit(".", 1)[1])
    userinfo = api.get("/v2/auth/oauth2/userinfo", HTTP_AUTHORIZATION=f"Bearer {answer['access_token']}")
    assert userinfo.status_code == 200

    issue_second_factors(ledger)
    return Issued(ledger=ledger, confidential=confidential, public=public)


def issue_second_factors(ledger: Ledger) -> None:
    """A TOTP set up through allauth's pages, a login with it and one with a recovery code: the TOTP
    secret and the recovery codes' seed go into the ledger (the codes are derived from the seed)."""
    from allauth.mfa.models import Authenticator
    from django.test import override_settings

    from accounts.adapter import MFAAdapter
    from tests.accounts.helpers import log_in, next_totp_code, recovery_codes_of, second_step, totp_activate
    from tests.factories import make_user

    user = make_user("factor-user")
    browser, _ = log_in(user.username)
    secret = ledger.add("TOTP secret", totp_activate(browser))
    codes = Authenticator.objects.get(user=user, type=Authenticator.Type.RECOVERY_CODES)
    ledger.add("recovery codes' seed", MFAAdapter().decrypt(codes.data["seed"]))
    again, _ = log_in(user.username)
    with override_settings(MFA_TOTP_TOLERANCE=1):  # the code typed at set-up is used up: the next one
        assert second_step(again, next_totp_code(secret)).status_code == 302
    by_recovery_code, _ = log_in(user.username)
    assert second_step(by_recovery_code, recovery_codes_of(user)[0]).status_code == 302


def wrong_value(prefix: str = "") -> str:
    return prefix + secrets.token_urlsafe(32)


def fail_in_every_way(cast: Cast, issued: Issued) -> None:
    """Failed exchanges and replays; every value presented goes into the ledger as well."""
    ledger, api = issued.ledger, cast.api
    confidential, public = issued.confidential, issued.public
    first = ledger.values["secret shown at registration"]

    # Wrong secret in the body and over Basic, for a fresh code (which then still works once).
    code = ledger.add("code tried with a wrong secret", get_code(cast.browser, confidential))
    wrong = ledger.add("wrong secret", wrong_value(SECRET_PREFIX))
    assert exchange(api, confidential, code, secret=wrong).status_code == 401
    auth = basic_header(ledger, "wrong secret", confidential.client_id, wrong)
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": confidential.redirect_uri_list[0]}
    assert token_request(api, data, auth=auth).status_code == 401
    access, refresh_token = tokens_of(exchange(api, confidential, code, secret=first))
    ledger.add("access token after wrong secrets", access)
    ledger.add("refresh token after wrong secrets", refresh_token)

    # Unknown code; a wrong verifier; a verifier where no challenge was sent.
    unknown = ledger.add("unknown code", wrong_value())
    assert exchange(api, confidential, unknown, secret=first).status_code == 400
    verifier, challenge = pkce_pair()
    ledger.add("verifier of the wrongly redeemed code", verifier)
    public_code = ledger.add(
        "public code redeemed with a wrong verifier", get_code(cast.browser, public, code_challenge=challenge)
    )
    bad_verifier = ledger.add("wrong verifier", wrong_value())
    assert exchange(api, public, public_code, verifier=bad_verifier).json()["error"] == "invalid_grant"
    downgrade = ledger.add("verifier sent for a code without a challenge", wrong_value())
    assert exchange(api, confidential, unknown, secret=first, verifier=downgrade).status_code == 400

    # Replays: the first code, and the first (rotated) refresh token.
    assert exchange(api, confidential, ledger.values["code"], secret=first).json()["error"] == "invalid_grant"
    replayed = refresh(api, confidential, ledger.values["refresh token"], secret=first)
    assert replayed.json()["error"] == "invalid_grant"
    # The replay revoked the family: its live access token is now refused.
    assert me(api, ledger.values["refreshed access token"]).status_code == 401
    # Credentials in the query string are refused; an unknown bearer token is refused.
    query_secret = "?client_secret=" + quote(first)
    assert api.post("/v2/auth/oauth2/token" + query_secret, {"grant_type": "refresh_token"}).status_code == 400
    assert me(api, ledger.add("unknown bearer token", wrong_value())).status_code == 401


def secrets_from_the_command(ledger: Ledger) -> None:
    """`manage.py oauthclient create` and `add-secret` print secrets; they must not be logged."""
    created = command(
        "create",
        "--owner",
        "owner",
        "--name",
        "Shell App",
        "--purpose",
        "Syncs your calendar.",
        "--redirect-uri",
        "https://shell.example.com/cb",
        "--scope",
        "PROFILE_READ",
        "--approve",
    )
    ledger.add("secret printed by `oauthclient create`", created["client_secret"])
    added = command("add-secret", created["client_id"])
    ledger.add("secret printed by `oauthclient add-secret`", added["client_secret"])
