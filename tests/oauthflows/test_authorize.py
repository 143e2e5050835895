"""GET /auth/oauth2/authorize and the consent POSTs (spec §4.1, SECURITY.md)."""

from urllib.parse import urlencode

import pytest
from django.test import Client

from oauthclients import services
from oauthclients.models import Grant
from tests.factories import PASSWORD, make_client
from tests.oauthflows.helpers import AUTHORIZE, assert_tokens, authorize_url, consent, exchange, pkce_pair, query_of
from tests.oauthflows.test_token import assert_token_error


def assert_error_page(response, text):
    assert response.status_code == 400
    assert "Location" not in response
    assert text in response.content.decode()


def assert_error_redirect(response, client, error, *, state="xyz", redirect_uri=None):
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith((redirect_uri or client.redirect_uri_list[0]) + "?")
    query = query_of(location)
    assert query["error"] == error
    assert query["error_description"]
    assert query["iss"] == "http://testserver"
    if state is None:
        assert "state" not in query
    else:
        assert query["state"] == state
    assert "code" not in query
    return query


def test_login_redirects_back_to_the_authorization_request(confidential, end_user):
    client, _ = confidential
    url = authorize_url(client, scope="PROFILE_READ,BOOKING_READ")
    browser = Client()
    response = browser.get(url)
    next_url = response["Location"].split("next=", 1)[1]
    login = browser.post("/accounts/login/", {"username": end_user.username, "password": PASSWORD, "next": url})
    assert login.status_code == 302 and login["Location"] == url
    assert browser.get(login["Location"]).status_code == 200
    assert next_url  # the login page was told where to come back to


def test_the_consent_page_shows_the_app_its_owner_website_host_and_grouped_scopes(browser, confidential, owner):
    client, _ = confidential
    page = browser.get(authorize_url(client, scope="PROFILE_READ ORG_PROFILE_READ BOOKING_READ"))
    assert page.status_code == 200
    html = page.content.decode()
    for text in (
        client.name,
        owner.username,
        client.website_url,
        "app.example.com",
        "Personal",
        "Organization",
        "View your profile",
        "View your organization&#x27;s teams",
        "TEAM_PROFILE_READ",
        ">Allow<",
        ">Deny<",
        "csrfmiddlewaretoken",
    ):
        assert text in html, text
    assert "Team</h3>" not in html  # no team scope was requested, the ORG_ one only implies one
    assert page["X-Frame-Options"] == "DENY"
    assert page["Referrer-Policy"] == "no-referrer"


def test_allow_redirects_with_code_state_and_issuer(browser, confidential):
    client, _ = confidential
    response = consent(browser, authorize_url(client, state="s p a c e&+/=é"))
    assert response.status_code == 302
    query = query_of(response["Location"])
    assert set(query) == {"code", "state", "iss"}
    assert query["state"] == "s p a c e&+/=é"
    assert query["iss"] == "http://testserver"
    assert len(query["code"]) >= 22


def test_an_empty_state_is_treated_alike_on_allow_and_deny(browser, confidential):
    # Neither redirect echoes an empty state (oauthlib omits it on Allow; Deny follows).
    client, _ = confidential
    allowed = consent(browser, authorize_url(client, state=""))
    assert set(query_of(allowed["Location"])) == {"code", "iss"}
    denied = consent(browser, authorize_url(client, state=""), decision="deny")
    assert_error_redirect(denied, client, "access_denied", state=None)
    refused = browser.get(authorize_url(client, state="", scope="NOT_A_SCOPE"))
    assert_error_redirect(refused, client, "invalid_scope", state=None)


def test_no_state_sent_means_none_returned(browser, confidential):
    client, _ = confidential
    response = consent(browser, authorize_url(client, state=None))
    assert "state" not in query_of(response["Location"])
    denied = consent(browser, authorize_url(client, state=None), decision="deny")
    assert_error_redirect(denied, client, "access_denied", state=None)


def test_deny_redirects_with_access_denied_and_issues_no_code(browser, confidential):
    client, _ = confidential
    response = consent(browser, authorize_url(client), decision="deny")
    assert_error_redirect(response, client, "access_denied")
    assert Grant.objects.count() == 0


def test_response_type_may_be_omitted_and_means_code(browser, confidential):
    client, _ = confidential
    assert "code" in query_of(consent(browser, authorize_url(client))["Location"])
    assert "code" in query_of(consent(browser, authorize_url(client, response_type="code"))["Location"])


def test_another_response_type_is_unsupported(browser, confidential):
    client, _ = confidential
    response = browser.get(authorize_url(client, response_type="token"))
    assert_error_redirect(response, client, "unsupported_response_type")


@pytest.mark.parametrize(
    "params, text",
    [
        ({"client_id": "no-such-client"}, "Unknown application"),
        ({"client_id": ""}, "Missing client_id"),
        ({"redirect_uri": "https://evil.example.com/callback"}, "not one of the application"),
        ({"redirect_uri": "https://app.example.com/callback/"}, "not one of the application"),
        ({"redirect_uri": "https://APP.example.com/callback"}, "not one of the application"),
        ({"redirect_uri": "https://app.example.com:443/callback"}, "not one of the application"),
        ({"redirect_uri": "https://app.example.com/callback?x=1"}, "not one of the application"),
        ({"redirect_uri": "https://user@app.example.com/callback"}, "not one of the application"),
        ({"redirect_uri": "https://app.example.com/callbackx"}, "not one of the application"),
        ({"redirect_uri": ""}, "Missing redirect_uri"),
    ],
)
def test_untrusted_client_or_redirect_uri_gets_an_error_page_and_no_redirect(browser, confidential, params, text):
    client, _ = confidential
    query = {"client_id": client.client_id, "redirect_uri": client.redirect_uri_list[0], "scope": "PROFILE_READ"}
    query.update(params)
    assert_error_page(browser.get(AUTHORIZE + "?" + urlencode(query)), text)


def test_missing_redirect_uri_parameter_is_an_error_page(browser, confidential):
    client, _ = confidential
    assert_error_page(
        browser.get(f"{AUTHORIZE}?client_id={client.client_id}&scope=PROFILE_READ"), "Missing redirect_uri"
    )


def test_duplicated_client_id_or_redirect_uri_is_an_error_page(browser, confidential):
    client, _ = confidential
    base = f"{AUTHORIZE}?client_id={client.client_id}&redirect_uri={client.redirect_uri_list[0]}&scope=PROFILE_READ"
    assert_error_page(browser.get(base + f"&client_id={client.client_id}"), "more than once")
    assert_error_page(browser.get(base + f"&redirect_uri={client.redirect_uri_list[0]}"), "more than once")


def test_other_duplicated_parameters_redirect_with_invalid_request(browser, confidential):
    client, _ = confidential
    response = browser.get(authorize_url(client) + "&scope=BOOKING_READ")
    assert_error_redirect(response, client, "invalid_request")


def test_a_pending_client_is_refused_to_other_users(browser, owner):
    client = make_client(owner).client
    assert_error_page(browser.get(authorize_url(client)), "awaiting review")


def test_the_owner_may_test_their_own_pending_client(owner):
    client = make_client(owner).client
    browser = Client()
    browser.force_login(owner)
    page = browser.get(authorize_url(client))
    assert page.status_code == 200 and "pending review" in page.content.decode()
    assert "code" in query_of(consent(browser, authorize_url(client))["Location"])


def test_a_rejected_client_is_refused_even_to_its_owner(owner, reviewer):
    client = make_client(owner).client
    services.client_reject(client=client, actor=reviewer, reason="Unclear purpose")
    browser = Client()
    browser.force_login(owner)
    assert_error_page(browser.get(authorize_url(client)), "rejected")


@pytest.mark.parametrize("separator", [" ", ",", ", "])
def test_scopes_may_be_space_or_comma_separated(browser, confidential, separator):
    client, _ = confidential
    response = consent(browser, authorize_url(client, scope=separator.join(["PROFILE_READ", "BOOKING_READ"])))
    code = query_of(response["Location"])["code"]
    from oauthclients.models import digest

    assert Grant.objects.get(code=digest(code)).scope == "PROFILE_READ BOOKING_READ"


def test_missing_scope_is_invalid_scope_for_a_scoped_client(browser, confidential):
    client, _ = confidential
    query = assert_error_redirect(browser.get(authorize_url(client, scope=None)), client, "invalid_scope")
    assert "required" in query["error_description"]
    assert_error_redirect(browser.get(authorize_url(client, scope="")), client, "invalid_scope")


def test_unknown_scopes_are_named(browser, confidential):
    client, _ = confidential
    query = assert_error_redirect(
        browser.get(authorize_url(client, scope="PROFILE_READ NUKE_ALL")), client, "invalid_scope"
    )
    assert "NUKE_ALL" in query["error_description"]


def test_scopes_outside_the_clients_are_refused_and_named(browser, confidential):
    client, _ = confidential
    response = browser.get(authorize_url(client, scope="PROFILE_READ WEBHOOK_WRITE"))
    query = assert_error_redirect(response, client, "invalid_scope")
    assert "WEBHOOK_WRITE" in query["error_description"]


def test_the_post_revalidates_everything(browser, confidential):
    client, _ = confidential
    # A consent page for an allowed scope, then a POST whose query asks for more: refused.
    assert browser.get(authorize_url(client, scope="PROFILE_READ")).status_code == 200
    widened = authorize_url(client, scope="PROFILE_READ WEBHOOK_WRITE").replace(AUTHORIZE + "?", AUTHORIZE + "/allow?")
    response = browser.post(widened, {"scope": "PROFILE_READ", "client_id": client.client_id})
    assert_error_redirect(response, client, "invalid_scope")
    # Hidden fields in the body are ignored: the grant follows the query only.
    allowed = authorize_url(client, scope="PROFILE_READ").replace(AUTHORIZE + "?", AUTHORIZE + "/allow?")
    response = browser.post(
        allowed, {"scope": "PROFILE_READ PROFILE_WRITE", "redirect_uri": "https://evil.example.com"}
    )
    assert response["Location"].startswith(client.redirect_uri_list[0] + "?")
    from oauthclients.models import digest

    assert Grant.objects.get(code=digest(query_of(response["Location"])["code"])).scope == "PROFILE_READ"


def test_a_client_rejected_between_page_and_post_gets_no_code(browser, confidential, reviewer):
    client, _ = confidential
    url = authorize_url(client)
    assert browser.get(url).status_code == 200
    services.client_reject(client=client, actor=reviewer, reason="Abuse")
    response = browser.post(url.replace(AUTHORIZE + "?", AUTHORIZE + "/allow?"))
    assert_error_page(response, "rejected")
    assert Grant.objects.count() == 0


def test_a_client_rejected_after_the_posts_validation_gets_no_code(browser, confidential, reviewer, monkeypatch):
    """The code grant asks again whether the client may act (oauthflows/token/oauth2.py's
    ValidatedCodeGrant): a rejection landing between the POST's validation and the code makes none, and (a rejected
    client's redirect being withheld) the error is the 400 page."""
    from oauthclients.models import ClientStatus
    from oauthflows.pages import views

    client, _ = confidential
    url = authorize_url(client)
    assert browser.get(url).status_code == 200
    checked = views._withheld

    def rejected_meanwhile(request, *, client, **kwargs):
        withheld = checked(request, client=client, **kwargs)
        if client.status != ClientStatus.REJECTED:  # asked again before the error redirect
            services.client_reject(client=client, actor=reviewer, reason="Abuse")
            client.status = ClientStatus.REJECTED  # the object the validated request holds
        return withheld

    monkeypatch.setattr(views, "_withheld", rejected_meanwhile)
    response = browser.post(url.replace(AUTHORIZE + "?", AUTHORIZE + "/allow?"))
    assert_error_page(response, "invalid_request: Invalid client_id parameter value.")
    assert Grant.objects.count() == 0


def test_the_consent_post_requires_csrf(confidential, end_user):
    client, _ = confidential
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(end_user)
    response = browser.post(authorize_url(client).replace(AUTHORIZE + "?", AUTHORIZE + "/allow?"))
    assert response.status_code == 403
    assert Grant.objects.count() == 0


def test_the_decision_urls_are_post_only(browser, confidential):
    client, _ = confidential
    for decision in ("allow", "deny"):
        response = browser.get(authorize_url(client).replace(AUTHORIZE + "?", f"{AUTHORIZE}/{decision}?"))
        assert response.status_code == 405


def test_an_anonymous_post_goes_to_login_then_back_to_the_get(confidential):
    client, _ = confidential
    response = Client().post(authorize_url(client).replace(AUTHORIZE + "?", AUTHORIZE + "/allow?"))
    assert response.status_code == 302
    assert "next=/auth/oauth2/authorize%3F" in response["Location"]


# --- PKCE at the authorization endpoint (RFC 7636, SECURITY.md) ---


def test_a_public_client_without_code_challenge_is_invalid_request(browser, public):
    response = browser.get(authorize_url(public))
    query = assert_error_redirect(response, public, "invalid_request")
    assert "code_challenge" in query["error_description"]


def test_a_public_client_with_s256_challenge_gets_a_code(browser, public):
    _, challenge = pkce_pair()
    for method in (None, "S256"):
        response = consent(browser, authorize_url(public, code_challenge=challenge, code_challenge_method=method))
        assert "code" in query_of(response["Location"])


@pytest.mark.parametrize("method", ["plain", "S512", "s256"])
def test_plain_or_unknown_challenge_methods_are_refused(browser, public, method):
    _, challenge = pkce_pair()
    response = browser.get(authorize_url(public, code_challenge=challenge, code_challenge_method=method))
    assert_error_redirect(response, public, "invalid_request")


@pytest.mark.parametrize("challenge", ["short", "x" * 42, "x" * 44, "a" * 42 + "=", "a" * 42 + "+"])
def test_a_malformed_challenge_is_refused(browser, public, challenge):
    assert_error_redirect(browser.get(authorize_url(public, code_challenge=challenge)), public, "invalid_request")


def test_a_method_without_a_challenge_is_refused(browser, confidential):
    client, _ = confidential
    response = browser.get(authorize_url(client, code_challenge_method="S256"))
    assert_error_redirect(response, client, "invalid_request")


def test_an_oversized_state_is_refused_without_echoing_it(browser, confidential):
    client, _ = confidential
    response = browser.get(authorize_url(client, state="s" * 5000))
    assert_error_redirect(response, client, "invalid_request", state=None)


def test_the_code_is_stored_only_as_a_digest_bound_to_everything(browser, public, end_user):
    _, challenge = pkce_pair()
    response = consent(browser, authorize_url(public, scope="PROFILE_READ", code_challenge=challenge))
    code = query_of(response["Location"])["code"]
    grant = Grant.objects.get()
    assert grant.code != code and code not in grant.code
    assert (
        grant.application_id,
        grant.user_id,
        grant.redirect_uri,
        grant.scope,
        grant.code_challenge,
        grant.code_challenge_method,
    ) == (public.pk, end_user.pk, "http://127.0.0.1:9000/cb", "PROFILE_READ", challenge, "S256")
    lifetime = (grant.expires - grant.created).total_seconds()
    assert 595 <= lifetime <= 601


def test_codes_carry_256_bits_and_never_repeat(browser, confidential):
    client, _ = confidential
    codes = {query_of(consent(browser, authorize_url(client))["Location"])["code"] for _ in range(5)}
    assert len(codes) == 5
    assert all(len(code) == 43 and code.replace("-", "").replace("_", "").isalnum() for code in codes)


def test_the_code_lifetime_follows_the_setting(browser, confidential, settings):
    client, _ = confidential
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "AUTHORIZATION_CODE_EXPIRE_SECONDS": 5}
    consent(browser, authorize_url(client))
    grant = Grant.objects.get()
    assert 4 <= (grant.expires - grant.created).total_seconds() <= 6


def test_the_code_lifetime_setting_is_read_from_the_environment():
    import os
    import subprocess
    import sys

    env = {**os.environ, "OAUTH_AUTHORIZATION_CODE_LIFETIME": "17", "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print(settings.OAUTH2_PROVIDER['AUTHORIZATION_CODE_EXPIRE_SECONDS'])",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "17"


# --- native apps (RFC 8252) --------------------------------------------------------------------


def test_a_native_app_with_a_private_use_scheme_completes_the_flow(browser, api, owner):
    native = make_client(
        owner, name="Phone", kind="public", redirect_uris=["com.example.app:/oauth/callback"], approve=True
    ).client
    verifier, challenge = pkce_pair()
    url = authorize_url(native, code_challenge=challenge)
    page = browser.get(url)
    assert page.status_code == 200 and "com.example.app</bdi></strong>" in page.content.decode()
    response = consent(browser, url)
    assert response.status_code == 302
    assert response["Location"].startswith("com.example.app:/oauth/callback?code=")
    code = query_of(response["Location"])["code"]
    assert_tokens(exchange(api, native, code, verifier=verifier), "PROFILE_READ")
    denied = consent(browser, url, decision="deny")
    assert denied["Location"].startswith("com.example.app:/oauth/callback?error=access_denied")


def test_a_native_app_still_needs_pkce(browser, owner):
    native = make_client(owner, kind="public", redirect_uris=["com.example.app:/oauth/callback"], approve=True).client
    response = browser.get(authorize_url(native))
    assert_error_redirect(response, native, "invalid_request")


@pytest.mark.parametrize("registered", ["http://127.0.0.1/cb", "http://127.0.0.1:9000/cb"])
@pytest.mark.parametrize("port", ["", ":1", ":51234"])
def test_a_loopback_ip_redirect_matches_any_port(browser, api, owner, registered, port):
    # RFC 8252 §7.3; the token request must repeat the exact URI used (RFC 6749 §4.1.3).
    native = make_client(owner, kind="public", redirect_uris=[registered], approve=True).client
    used = f"http://127.0.0.1{port}/cb"
    verifier, challenge = pkce_pair()
    response = consent(browser, authorize_url(native, redirect_uri=used, code_challenge=challenge))
    assert response["Location"].startswith(used + "?code=")
    code = query_of(response["Location"])["code"]
    other_port = "http://127.0.0.1:2/cb"
    assert_token_error(exchange(api, native, code, verifier=verifier, redirect_uri=other_port), "invalid_grant")


def test_an_ipv6_loopback_redirect_matches_any_port(browser, owner):
    native = make_client(owner, kind="public", redirect_uris=["http://[::1]/cb"], approve=True).client
    _, challenge = pkce_pair()
    response = consent(browser, authorize_url(native, redirect_uri="http://[::1]:8123/cb", code_challenge=challenge))
    assert response["Location"].startswith("http://[::1]:8123/cb?code=")


@pytest.mark.parametrize(
    "used",
    [
        "http://127.0.0.1:5000/other",  # the path still matches exactly
        "http://127.0.0.1:5000/cb/",
        "http://127.0.0.1:5000/cb?x=1",
        "http://[::1]:5000/cb",  # another host
        "http://localhost:5000/cb",
        "https://127.0.0.1:5000/cb",
    ],
)
def test_only_the_port_of_a_loopback_ip_redirect_is_free(browser, owner, used):
    native = make_client(owner, kind="public", redirect_uris=["http://127.0.0.1/cb"], approve=True).client
    _, challenge = pkce_pair()
    assert_error_page(browser.get(authorize_url(native, redirect_uri=used, code_challenge=challenge)), "not registered")


def test_localhost_keeps_exact_port_matching(browser, confidential):
    client, _ = confidential  # registers http://localhost:8765/cb
    assert browser.get(authorize_url(client, redirect_uri="http://localhost:8765/cb")).status_code == 200
    assert_error_page(browser.get(authorize_url(client, redirect_uri="http://localhost:8766/cb")), "not registered")


# --- what a redirect-URI mismatch page tells the developer --------------------------------------


@pytest.mark.parametrize(
    "sent, hint",
    [
        ("http://localhost:8766/cb", "Only the port differs from the registered http://localhost:8765/cb"),
        (
            "http://app.example.com/callback",
            "Only the scheme differs from the registered https://app.example.com/callback",
        ),
        (
            "https://app.example.com/callback/",
            "Only a trailing slash differs from the registered https://app.example.com/callback",
        ),
        ("https://elsewhere.example.net/callback", None),
    ],
)
def test_a_mismatch_page_shows_what_was_sent_and_what_is_registered(browser, confidential, sent, hint):
    client, _ = confidential
    response = browser.get(authorize_url(client, redirect_uri=sent))
    assert_error_page(response, "not registered")
    page = response.content.decode()
    assert f'Sent: <code class="mono">{sent}</code>' in page
    for uri in client.redirect_uri_list:
        assert f'<li><code class="mono">{uri}</code></li>' in page
    if hint:
        assert hint in page
    else:
        assert "differs" not in page


def test_the_mismatch_page_escapes_and_shortens_what_was_sent(browser, confidential):
    client, _ = confidential
    sent = "https://app.example.com/<script>" + "x" * 1000
    page = browser.get(authorize_url(client, redirect_uri=sent)).content.decode()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "x" * 300 not in page and "x" * 200 in page


def test_a_code_lives_ten_minutes_by_default(browser, confidential):
    # RFC 6749 §4.1.2's upper bound, as Google and GitHub: a code copied into curl by hand still works.
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key != "OAUTH_AUTHORIZATION_CODE_LIFETIME"}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print(settings.OAUTH2_PROVIDER['AUTHORIZATION_CODE_EXPIRE_SECONDS'])",
        ],
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings_test"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "600"
    client, _ = confidential
    consent(browser, authorize_url(client))
    grant = Grant.objects.get()
    assert 595 <= (grant.expires - grant.created).total_seconds() <= 605


# --- first-hour finding 10: a request that can only fail is refused before the login page ---


@pytest.mark.parametrize(
    "change",
    [
        {"redirect_uri": "https://app.example.com/wrong"},
        {"client_id": "no-such-client"},
        {"redirect_uri": None},
    ],
    ids=["wrong-redirect-uri", "unknown-client", "no-redirect-uri"],
)
def test_an_anonymous_request_that_can_only_fail_gets_the_error_page_not_the_login(db, confidential, change):
    from django.test import Client

    client, _ = confidential
    params = {"client_id": client.client_id, "redirect_uri": client.redirect_uri_list[0], "scope": "PROFILE_READ"}
    params.update(change)
    response = Client().get(AUTHORIZE + "?" + urlencode({k: v for k, v in params.items() if v is not None}))
    assert response.status_code == 400
    assert not response.has_header("Location")


def test_an_anonymous_request_to_a_good_or_pending_client_goes_to_the_login(db, confidential, owner):
    from django.test import Client

    client, _ = confidential
    pending = make_client(owner, name="Secret Project X", redirect_uris=["https://x.example/cb"]).client
    for app in (client, pending):
        response = Client().get(authorize_url(app))
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_not_approved_page_does_not_name_the_client(browser, owner):
    pending = make_client(owner, name="Secret Project X", redirect_uris=["https://x.example/cb"]).client
    response = browser.get(authorize_url(pending))
    assert response.status_code == 400 and "Secret Project X" not in response.content.decode()
