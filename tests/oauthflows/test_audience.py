"""RFC 8707 resource indicators: tokens bound to the resources they were asked for (docs/agents.md).

`resource` at authorize and at the token endpoint must name a known protected resource (this
server's own API, OAUTH_RESOURCE_URI, or a resource server's resource URI), else `invalid_target`;
the token's audience is kept on refresh (or narrowed), returned by introspection as `aud`, and
checked by the scopes verifiers. A token without audience stays valid everywhere.
"""

import json
import re
from io import StringIO
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from oauthclients import services
from oauthclients.models import AccessToken, Grant, RefreshToken, digest
from scopes.introspection import _claims
from scopes.verifiers import audience_accepted
from tests.oauthflows.helpers import (
    INTROSPECT,
    authorize_url,
    basic,
    client_post,
    consent,
    exchange,
    get_code,
    me,
    query_of,
    refresh,
    token_request,
)
from tests.oauthflows.test_token import assert_token_error

BOOKINGS = "https://bookings.example.com/api"
CALENDAR = "https://calendar.example.com/api"
MCP = "http://127.0.0.1:8931/mcp"


@pytest.fixture
def bookings_resource_server(reviewer):
    created = services.resource_server_create(owner=reviewer, name="Bookings", resource_uri=BOOKINGS, actor=reviewer)
    return created.client, created.secret.plaintext


@pytest.fixture
def own_api():
    return settings.OAUTH_RESOURCE_URI


def tokens_for(browser, api, confidential, *, resource=None):
    client, secret = confidential
    code = get_code(browser, client, **({"resource": resource} if resource else {}))
    return tokens_request_with(api, client, secret, code, [])


def introspect(api, server, token):
    client, secret = server
    response = client_post(api, INTROSPECT, client, {"token": token}, auth=basic(client.client_id, secret))
    assert response.status_code == 200, response.content
    return response.json()


def test_a_token_asked_for_the_own_api_is_bound_to_it_and_accepted_there(
    browser, api, confidential, own_api, bookings_resource_server
):
    response = tokens_for(browser, api, confidential, resource=own_api)
    assert response.status_code == 200, response.content
    token = response.json()["access_token"]
    assert AccessToken.objects.get(token_checksum=digest(token)).resource == [own_api]
    assert me(api, token).status_code == 200
    # Bound to this server's own API: another resource server learns nothing of it (RFC 7662 §2.2).
    assert introspect(api, bookings_resource_server, token) == {"active": False}


def test_a_token_for_another_resource_is_refused_here(browser, api, confidential, bookings_resource_server):
    response = tokens_for(browser, api, confidential, resource=BOOKINGS)
    assert response.status_code == 200, response.content
    token = response.json()["access_token"]
    answer = me(api, token)
    assert answer.status_code == 401
    assert 'error="invalid_token"' in answer["WWW-Authenticate"]
    assert "audience" in answer.json()["error"]["message"]
    assert introspect(api, bookings_resource_server, token)["aud"] == [BOOKINGS]


def test_a_token_without_resource_has_no_audience_and_works_everywhere(
    browser, api, confidential, bookings_resource_server
):
    token = tokens_for(browser, api, confidential).json()["access_token"]
    assert AccessToken.objects.get(token_checksum=digest(token)).resource == []
    assert me(api, token).status_code == 200
    answer = introspect(api, bookings_resource_server, token)
    assert answer["active"] is True and "aud" not in answer
    calendar = services.resource_server_create(
        owner=bookings_resource_server[0].user, name="Calendar", resource_uri=CALENDAR
    )
    assert introspect(api, (calendar.client, calendar.secret.plaintext), token)["active"] is True


def test_a_token_bound_to_another_resource_server_is_inactive_to_this_one(
    browser, api, confidential, bookings_resource_server
):
    # The attack: a token the app got for Bookings, relayed to Calendar, which asks the server.
    calendar = services.resource_server_create(
        owner=bookings_resource_server[0].user, name="Calendar", resource_uri=CALENDAR
    )
    calendar_pair = (calendar.client, calendar.secret.plaintext)
    unlisted = services.resource_server_create(
        owner=bookings_resource_server[0].user, name="Reports"
    )  # no resource URI
    token = tokens_for(browser, api, confidential, resource=BOOKINGS).json()["access_token"]
    assert introspect(api, bookings_resource_server, token)["active"] is True
    assert introspect(api, calendar_pair, token) == {"active": False}
    assert introspect(api, (unlisted.client, unlisted.secret.plaintext), token) == {"active": False}
    # The app that holds it still learns about its own token, as before.
    client, secret = confidential
    own = client_post(api, INTROSPECT, client, {"token": token}, secret=secret).json()
    assert own["active"] is True and own["aud"] == [BOOKINGS]


def test_a_token_bound_to_two_resource_servers_is_active_to_each(browser, api, confidential, bookings_resource_server):
    calendar = services.resource_server_create(
        owner=bookings_resource_server[0].user, name="Calendar", resource_uri=CALENDAR
    )
    client, secret = confidential
    url = authorize_url(client, scope="PROFILE_READ") + f"&{urlencode({'resource': BOOKINGS})}"
    url += f"&{urlencode({'resource': CALENDAR})}"
    response = consent(browser, url)
    code = query_of(response["Location"])["code"]
    token = exchange(api, client, code, secret=secret).json()["access_token"]
    for server in (bookings_resource_server, (calendar.client, calendar.secret.plaintext)):
        assert introspect(api, server, token)["aud"] == [BOOKINGS, CALENDAR]


def test_a_service_that_requires_an_audience_refuses_a_token_without_one(browser, api, confidential, settings):
    settings.OAUTH_REQUIRE_AUDIENCE = True
    unbound = tokens_for(browser, api, confidential).json()["access_token"]
    bound = tokens_for(browser, api, confidential, resource=settings.OAUTH_RESOURCE_URI).json()["access_token"]
    refused = me(api, unbound)
    assert refused.status_code == 401
    assert "resource=" in refused.json()["error"]["message"]
    assert me(api, bound).status_code == 200


@pytest.mark.parametrize(
    "resource",
    [
        "https://unknown.example.com/api",  # well formed, but no resource of this server
        BOOKINGS + "#frag",
        BOOKINGS + "?tenant=1",
        "https://user@bookings.example.com/api",
        "http://bookings.example.com/api",  # http off loopback
        "/relative",
        "urn:example:bookings",
    ],
)
def test_an_unknown_or_malformed_resource_at_authorize_is_invalid_target(
    browser, confidential, bookings_resource_server, resource
):
    client, _secret = confidential
    # Refused before the consent page: straight back to the app.
    response = browser.get(authorize_url(client, resource=resource))
    assert response.status_code == 302
    query = query_of(response["Location"])
    assert response["Location"].startswith(client.redirect_uri_list[0])
    assert query["error"] == "invalid_target", query
    assert not Grant.objects.exists()


def test_a_rejected_resource_server_is_no_resource(browser, confidential, bookings_resource_server, reviewer):
    services.client_reject(client=bookings_resource_server[0], actor=reviewer, reason="retired")
    response = browser.get(authorize_url(confidential[0], resource=BOOKINGS))
    assert query_of(response["Location"])["error"] == "invalid_target"


def test_too_many_resources_are_refused(browser, confidential, own_api):
    client, _secret = confidential
    url = authorize_url(client) + "".join(f"&resource={own_api}" for _ in range(6))
    assert query_of(browser.get(url)["Location"])["error"] == "invalid_target"


def test_two_resources_at_authorize_and_one_at_token_narrows_the_audience(
    browser, api, confidential, bookings_resource_server, own_api
):
    client, secret = confidential
    url = authorize_url(client) + f"&resource={BOOKINGS}&resource={own_api}"
    code = query_of(consent(browser, url)["Location"])["code"]
    assert sorted(Grant.objects.get().resource) == sorted([BOOKINGS, own_api])
    response = exchange(api, client, code, secret=secret, **{})
    # Without resource at the token request: the whole audience of the authorization.
    token = response.json()["access_token"]
    assert sorted(AccessToken.objects.get(token_checksum=digest(token)).resource) == sorted([BOOKINGS, own_api])
    assert me(api, token).status_code == 200  # the own API is among its audience

    code = query_of(consent(browser, url)["Location"])["code"]
    response = tokens_request_with(api, client, secret, code, [BOOKINGS])
    assert response.status_code == 200, response.content
    token = response.json()["access_token"]
    assert AccessToken.objects.get(token_checksum=digest(token)).resource == [BOOKINGS]
    assert me(api, token).status_code == 401


def tokens_request_with(api, client, secret, code, resources, *, as_json=False):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": client.redirect_uri_list[0],
        "client_id": client.client_id,
        "client_secret": secret,
    }
    if as_json:
        return token_request(api, data | {"resource": resources}, as_json=True)
    from urllib.parse import urlencode

    body = urlencode(data) + "".join("&" + urlencode({"resource": uri}) for uri in resources)
    return api.post("/v2/auth/oauth2/token", data=body, content_type="application/x-www-form-urlencoded")


def test_a_token_request_cannot_widen_the_audience(browser, api, confidential, bookings_resource_server, own_api):
    client, secret = confidential
    code = get_code(browser, client, resource=own_api)
    response = tokens_request_with(api, client, secret, code, [BOOKINGS])
    body = assert_token_error(response, "invalid_target")
    assert "widen" in body["error_description"]
    # The refusal consumed nothing: the code still works for what was authorized.
    assert exchange(api, client, code, secret=secret).status_code == 200


def test_a_resource_at_the_token_request_alone_binds_the_token(browser, api, confidential, bookings_resource_server):
    client, secret = confidential
    response = tokens_request_with(api, client, secret, get_code(browser, client), [BOOKINGS], as_json=True)
    assert response.status_code == 200, response.content
    assert AccessToken.objects.get(token_checksum=digest(response.json()["access_token"])).resource == [BOOKINGS]


def test_an_unknown_resource_at_the_token_request_is_invalid_target(browser, api, confidential):
    client, secret = confidential
    code = get_code(browser, client)
    response = tokens_request_with(api, client, secret, code, ["https://nowhere.example.com/"])
    assert_token_error(response, "invalid_target")
    response = tokens_request_with(api, client, secret, code, ["https://x.example.com/a#b"])
    assert_token_error(response, "invalid_target")
    assert exchange(api, client, code, secret=secret).status_code == 200


def test_refresh_keeps_the_audience_and_may_narrow_it_but_never_widen(
    browser, api, confidential, bookings_resource_server, own_api
):
    client, secret = confidential
    url = authorize_url(client) + f"&resource={BOOKINGS}&resource={own_api}"
    code = query_of(consent(browser, url)["Location"])["code"]
    first = exchange(api, client, code, secret=secret).json()

    kept = refresh(api, client, first["refresh_token"], secret=secret)
    assert kept.status_code == 200, kept.content
    kept = kept.json()
    assert sorted(AccessToken.objects.get(token_checksum=digest(kept["access_token"])).resource) == sorted(
        [BOOKINGS, own_api]
    )

    narrowed = refresh(api, client, kept["refresh_token"], secret=secret, resource=BOOKINGS)
    assert narrowed.status_code == 200, narrowed.content
    narrowed = narrowed.json()
    assert AccessToken.objects.get(token_checksum=digest(narrowed["access_token"])).resource == [BOOKINGS]
    assert RefreshToken.objects.get(token_checksum=digest(narrowed["refresh_token"])).resource == [BOOKINGS]

    widened = refresh(api, client, narrowed["refresh_token"], secret=secret, resource=own_api)
    assert_token_error(widened, "invalid_target")
    # Refused before anything changed: the refresh token is still the live one.
    again = refresh(api, client, narrowed["refresh_token"], secret=secret)
    assert again.status_code == 200, again.content


def test_refresh_of_a_token_without_audience_may_bind_it_to_a_known_resource(
    browser, api, confidential, bookings_resource_server
):
    client, secret = confidential
    first = tokens_for(browser, api, confidential).json()
    response = refresh(api, client, first["refresh_token"], secret=secret, resource="https://nowhere.example.com/")
    assert_token_error(response, "invalid_target")
    response = refresh(api, client, first["refresh_token"], secret=secret, resource=BOOKINGS)
    assert response.status_code == 200, response.content
    assert AccessToken.objects.get(token_checksum=digest(response.json()["access_token"])).resource == [BOOKINGS]


# --- resource servers' resource URIs ---------------------------------------------------------


@pytest.mark.parametrize(
    "uri", ["not a uri", "ftp://bookings.example.com/", "https://bookings.example.com/#x", "http://example.com/api"]
)
def test_a_resource_server_needs_a_valid_resource_uri(reviewer, uri):
    with pytest.raises(ValidationError) as caught:
        services.resource_server_create(owner=reviewer, name="X", resource_uri=uri, actor=reviewer)
    assert "resource_uri" in caught.value.message_dict


def test_two_resource_servers_cannot_share_a_resource_uri(reviewer, bookings_resource_server):
    with pytest.raises(ValidationError):
        services.resource_server_create(owner=reviewer, name="Y", resource_uri=BOOKINGS, actor=reviewer)
    with pytest.raises(ValidationError):
        services.resource_server_create(
            owner=reviewer, name="Z", resource_uri=settings.OAUTH_RESOURCE_URI, actor=reviewer
        )


def test_the_cli_creates_a_resource_server_with_its_resource_uri(reviewer):
    out = StringIO()
    call_command(
        "oauthclient",
        "create",
        "--resource-server",
        "--owner",
        reviewer.username,
        "--name",
        "MCP",
        "--resource-uri",
        MCP,
        stdout=out,
    )
    printed = json.loads(out.getvalue())
    assert printed["resource_uri"] == MCP


def test_the_cli_refuses_a_resource_uri_for_an_app(reviewer):
    with pytest.raises(CommandError, match="--resource-server"):
        call_command(
            "oauthclient",
            "create",
            "--owner",
            reviewer.username,
            "--name",
            "App",
            "--redirect-uri",
            "https://app.example.com/cb",
            "--scope",
            "PROFILE_READ",
            "--purpose",
            "x",
            "--resource-uri",
            MCP,
        )


# --- the scopes side ---------------------------------------------------------------------------


def test_the_introspection_verifier_reads_aud_as_a_string_or_a_list():
    base = {"scope": "", "client_id": "c", "username": "u", "sub": "1", "exp": 2_000_000_000}
    assert _claims(base)["aud"] == ()
    assert _claims(base | {"aud": "https://a"})["aud"] == ("https://a",)
    assert _claims(base | {"aud": ["https://a", "https://b"]})["aud"] == ("https://a", "https://b")
    assert _claims(base | {"aud": 7}) is None
    assert _claims(base | {"aud": ["https://a", 7]}) is None


def test_audience_accepted_follows_the_settings(settings):
    settings.OAUTH_RESOURCE_URI = "https://api.example.com"
    settings.OAUTH_REQUIRE_AUDIENCE = False
    assert audience_accepted(())
    assert audience_accepted(("https://other", "https://api.example.com"))
    assert not audience_accepted(("https://other",))
    assert not audience_accepted(("https://api.example.com/more",))  # exact, never a prefix
    assert audience_accepted(("https://api.example.com/",))  # a trailing "/" is no difference
    assert not audience_accepted(("https://API.example.com",))
    settings.OAUTH_REQUIRE_AUDIENCE = True
    assert not audience_accepted(())
    settings.OAUTH_RESOURCE_URI = None
    assert not audience_accepted(("https://api.example.com",))


def test_the_consent_page_names_the_services_the_access_is_for(
    browser, confidential, bookings_resource_server, own_api
):
    client, _secret = confidential
    page = browser.get(authorize_url(client, resource=BOOKINGS, prompt="consent")).content.decode()
    assert re.search(r"works only with this service:\s*<strong>Bookings</strong>", page) and BOOKINGS in page
    own = browser.get(authorize_url(client, resource=own_api, prompt="consent")).content.decode()
    assert re.search(r"works only with this service:\s*<strong>Scheduling API</strong>", own)
    plain = browser.get(authorize_url(client, prompt="consent")).content.decode()
    assert "works only with" not in plain
