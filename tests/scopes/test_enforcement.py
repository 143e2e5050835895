"""Scope rules on /v2 resource endpoints (spec §1, §2.3-2.5, §5.5-5.6; RFC 6750 §3.1).

The views are the test-only declarations in tests/scopes/urls_for_tests.py.
"""

import pytest

from tests.scopes.responses import assert_insufficient_scope, assert_no_token, assert_success
from tests.scopes.tokens import ALL_SCOPES, bearer, tokens_through_http

pytestmark = pytest.mark.urls("tests.scopes.urls_for_tests")

TEAM = "/v2/teams/7/bookings"
ORG_TEAM = "/v2/organizations/3/teams/7/bookings"
ORG = "/v2/organizations/3/bookings"


def call(client, method, path, token):
    return getattr(client, method)(path, **bearer(token))


# --- personal level: scope_resource derives <RESOURCE>_READ / _WRITE from the method ----------


@pytest.mark.parametrize("method", ["get", "head"])
def test_a_read_needs_the_read_scope(client, issue_token, method):
    response = call(client, method, "/v2/bookings", issue_token("BOOKING_READ"))
    assert response.status_code == 200, response.content


def test_a_read_is_refused_without_the_read_scope(client, issue_token):
    response = call(client, "get", "/v2/bookings", issue_token("PROFILE_READ EVENT_TYPE_READ"))
    assert_insufficient_scope(response, required="BOOKING_READ", granted="PROFILE_READ EVENT_TYPE_READ")


@pytest.mark.parametrize("method", ["post", "patch", "delete"])
def test_a_write_needs_the_write_scope(client, issue_token, method):
    assert_success(call(client, method, "/v2/bookings", issue_token("BOOKING_WRITE")), "BookingsApi")


@pytest.mark.parametrize("method", ["post", "patch", "delete"])
def test_a_read_scope_does_not_allow_a_write(client, issue_token, method):
    response = call(client, method, "/v2/bookings", issue_token("BOOKING_READ"))
    assert_insufficient_scope(response, required="BOOKING_WRITE", granted="BOOKING_READ")


def test_the_granting_user_is_the_request_user(client, issue_token, end_user):
    data = assert_success(call(client, "get", "/v2/bookings", issue_token("BOOKING_READ")), "BookingsApi")
    assert data["user"] == end_user.pk


@pytest.mark.parametrize("granted", ["TEAM_BOOKING_READ", "ORG_BOOKING_READ"])
def test_a_team_or_org_scope_does_not_open_the_personal_route(client, issue_token, granted):
    response = call(client, "get", "/v2/bookings", issue_token(granted))
    assert_insufficient_scope(response, required="BOOKING_READ", granted=granted)


# --- team level: /v2/teams/<teamId>/... and /v2/organizations/<orgId>/teams/<teamId>/... ---------


@pytest.mark.parametrize("path", [TEAM, ORG_TEAM])
def test_a_team_route_accepts_the_team_scope(client, issue_token, path):
    assert_success(call(client, "get", path, issue_token("TEAM_BOOKING_READ")), "BookingsApi")
    assert_success(call(client, "post", path, issue_token("TEAM_BOOKING_WRITE")), "BookingsApi")


@pytest.mark.parametrize("path", [TEAM, ORG_TEAM])
def test_a_team_route_refuses_the_personal_scope(client, issue_token, path):
    response = call(client, "get", path, issue_token("BOOKING_READ BOOKING_WRITE"))
    error = assert_insufficient_scope(response, required="TEAM_BOOKING_READ", granted="BOOKING_READ BOOKING_WRITE")
    # The organization-wide alternative is named too, so the developer knows both ways in.
    assert "ORG_BOOKING_READ" in error["message"]


@pytest.mark.parametrize("path", [TEAM, ORG_TEAM])
def test_a_team_read_scope_does_not_allow_a_team_write(client, issue_token, path):
    response = call(client, "post", path, issue_token("TEAM_BOOKING_READ"))
    assert_insufficient_scope(response, required="TEAM_BOOKING_WRITE", granted="TEAM_BOOKING_READ")


@pytest.mark.parametrize("path", [TEAM, ORG_TEAM])
@pytest.mark.parametrize(("method", "granted"), [("get", "ORG_BOOKING_READ"), ("post", "ORG_BOOKING_WRITE")])
def test_an_org_scope_grants_the_matching_team_scope(client, issue_token, path, method, granted):
    # Spec §2.5: an ORG_ scope automatically grants the corresponding TEAM_ scope.
    assert_success(call(client, method, path, issue_token(granted)), "BookingsApi")


@pytest.mark.parametrize("path", [TEAM, ORG_TEAM])
def test_an_org_read_scope_does_not_grant_the_team_write_scope(client, issue_token, path):
    response = call(client, "post", path, issue_token("ORG_BOOKING_READ"))
    assert_insufficient_scope(response, required="TEAM_BOOKING_WRITE", granted="ORG_BOOKING_READ")


def test_an_org_scope_does_not_grant_another_team_scope(client, issue_token):
    granted = "ORG_PROFILE_READ ORG_MEMBERSHIP_READ ORG_SCHEDULE_READ"
    response = call(client, "get", ORG_TEAM, issue_token(granted))
    assert_insufficient_scope(response, required="TEAM_BOOKING_READ", granted=granted)


@pytest.mark.parametrize("granted", ["TEAM_MEMBERSHIP_READ", "ORG_MEMBERSHIP_READ"])
def test_team_memberships_accept_the_team_scope_or_its_org_twin(client, issue_token, granted):
    path = "/v2/organizations/3/teams/7/memberships"
    assert_success(call(client, "get", path, issue_token(granted)), "MembershipsApi")


def test_team_memberships_refuse_other_org_scopes(client, issue_token):
    path = "/v2/organizations/3/teams/7/memberships"
    response = call(client, "get", path, issue_token("ORG_BOOKING_READ ORG_MEMBERSHIP_WRITE"))
    assert_insufficient_scope(
        response, required="TEAM_MEMBERSHIP_READ", granted="ORG_BOOKING_READ ORG_MEMBERSHIP_WRITE"
    )


def test_an_org_scope_without_a_team_twin_opens_no_team_route(client, issue_token):
    # ORG_WEBHOOK_READ exists, TEAM_WEBHOOK_READ does not: nothing is implied, nothing opens.
    response = call(client, "get", "/v2/teams/7/webhooks", issue_token(ALL_SCOPES))
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "insufficient_scope"


# --- organization level: /v2/organizations/<orgId>/... not targeting a team --------------------


def test_an_org_route_accepts_the_org_scope(client, issue_token):
    assert_success(call(client, "get", ORG, issue_token("ORG_BOOKING_READ")), "BookingsApi")
    assert_success(call(client, "post", ORG, issue_token("ORG_BOOKING_WRITE")), "BookingsApi")
    path = "/v2/organizations/3/memberships"
    assert_success(call(client, "get", path, issue_token("ORG_MEMBERSHIP_READ")), "MembershipsApi")


@pytest.mark.parametrize("granted", ["TEAM_BOOKING_READ", "BOOKING_READ", "TEAM_BOOKING_READ BOOKING_READ"])
def test_an_org_route_refuses_team_and_personal_scopes(client, issue_token, granted):
    # The implication runs ORG_ -> TEAM_ only: a team grant never opens an organization route.
    response = call(client, "get", ORG, issue_token(granted))
    assert_insufficient_scope(response, required="ORG_BOOKING_READ", granted=granted)


def test_an_org_read_scope_does_not_allow_an_org_write(client, issue_token):
    response = call(client, "delete", ORG, issue_token("ORG_BOOKING_READ"))
    assert_insufficient_scope(response, required="ORG_BOOKING_WRITE", granted="ORG_BOOKING_READ")


def test_a_resource_with_no_scope_at_the_route_level_is_refused_to_every_scoped_token(client, issue_token):
    # WORKFLOW has team scopes but no organization scopes: a declaration mistake fails closed.
    response = call(client, "get", "/v2/organizations/3/workflows", issue_token(ALL_SCOPES))
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert_success(call(client, "get", "/v2/teams/7/workflows", issue_token("TEAM_WORKFLOW_READ")), "WorkflowsApi")


# --- the route decides the level, whatever its URL calls the ids -------------------------------


def test_a_team_route_with_differently_named_ids_still_needs_the_team_scope(client, issue_token):
    path = "/v2/teams/7/bookings-by-id"
    response = call(client, "get", path, issue_token("BOOKING_READ"))
    assert_insufficient_scope(response, required="TEAM_BOOKING_READ", granted="BOOKING_READ")
    assert_success(call(client, "get", path, issue_token("TEAM_BOOKING_READ")), "BookingsApi")


def test_an_org_route_with_differently_named_ids_still_needs_the_org_scope(client, issue_token):
    path = "/v2/organizations/acme/bookings-by-slug"
    response = call(client, "get", path, issue_token("BOOKING_READ TEAM_BOOKING_READ"))
    assert_insufficient_scope(response, required="ORG_BOOKING_READ", granted="BOOKING_READ TEAM_BOOKING_READ")
    assert_success(call(client, "get", path, issue_token("ORG_BOOKING_READ")), "BookingsApi")


# --- explicit per-method declarations -----------------------------------------------------------


def test_an_explicit_declaration_is_enforced_per_method(client, issue_token):
    assert_success(call(client, "get", "/v2/schedules", issue_token("SCHEDULE_READ")), "SchedulesApi")
    assert_success(call(client, "post", "/v2/schedules", issue_token("SCHEDULE_WRITE")), "SchedulesApi")
    response = call(client, "get", "/v2/schedules", issue_token("SCHEDULE_WRITE"))
    assert_insufficient_scope(response, required="SCHEDULE_READ", granted="SCHEDULE_WRITE")
    response = call(client, "post", "/v2/schedules", issue_token("SCHEDULE_READ"))
    assert_insufficient_scope(response, required="SCHEDULE_WRITE", granted="SCHEDULE_READ")


def test_head_follows_the_get_declaration(client, issue_token):
    assert call(client, "head", "/v2/schedules", issue_token("SCHEDULE_READ")).status_code == 200
    response = call(client, "head", "/v2/schedules", issue_token("SCHEDULE_WRITE"))
    assert response.status_code == 403
    assert 'scope="SCHEDULE_READ"' in response["WWW-Authenticate"]


def test_a_method_the_declaration_leaves_out_is_refused_to_scoped_tokens(client, issue_token):
    # SchedulesApi implements DELETE but declares no scope for it: deny by default.
    response = call(client, "delete", "/v2/schedules", issue_token(ALL_SCOPES))
    assert_insufficient_scope(response, required=None, granted=ALL_SCOPES)


@pytest.mark.parametrize(
    ("path", "granted"), [("/v2/schedules", "SCHEDULE_READ SCHEDULE_WRITE"), ("/v2/bookings", "BOOKING_WRITE")]
)
def test_a_method_the_view_does_not_implement_is_405_not_a_scope_error(client, issue_token, path, granted):
    response = call(client, "put", path, issue_token(granted))
    assert response.status_code == 405, response.content
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_method_the_view_does_not_implement_still_needs_a_token(client):
    assert_no_token(client.put("/v2/schedules"))


# --- public endpoints ---------------------------------------------------------------------------


def test_a_public_endpoint_needs_no_token(client):
    data = assert_success(client.post("/v2/bookings/create"), "BookingCreateApi")
    assert data["user"] is None


def test_a_public_endpoint_needs_no_scope(client, issue_token, end_user):
    # A token whose scopes cover nothing about bookings still may create one, as its user.
    data = assert_success(call(client, "post", "/v2/bookings/create", issue_token("PROFILE_READ")), "BookingCreateApi")
    assert data["user"] == end_user.pk


# --- deny by default ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_undeclared_view_refuses_every_scoped_token(client, issue_token, method):
    response = call(client, method, "/v2/undeclared", issue_token(ALL_SCOPES))
    assert_insufficient_scope(response, required=None, granted=ALL_SCOPES)


def test_an_undeclared_view_still_needs_a_token(client):
    assert_no_token(client.get("/v2/undeclared"))


# --- legacy clients (spec §2.1, §5.6, §5.8) ------------------------------------------------------

EVERY_ROUTE = [
    ("get", "/v2/bookings", "BookingsApi"),
    ("post", "/v2/bookings", "BookingsApi"),
    ("get", TEAM, "BookingsApi"),
    ("delete", ORG_TEAM, "BookingsApi"),
    ("patch", ORG, "BookingsApi"),
    ("get", "/v2/organizations/3/teams/7/memberships", "MembershipsApi"),
    ("delete", "/v2/schedules", "SchedulesApi"),
    ("get", "/v2/undeclared", "UndeclaredApi"),
]


@pytest.mark.parametrize(("method", "path", "view"), EVERY_ROUTE)
def test_a_legacy_clients_unrestricted_token_passes_everywhere(client, issue_token, end_user, method, path, view):
    data = assert_success(call(client, method, path, issue_token("", legacy=True)), view)
    assert data["user"] == end_user.pk


def test_a_legacy_client_token_issued_with_scopes_is_restricted_to_them(client, issue_token):
    # Spec §5.8 step a: once the authorization URL carries scopes, new tokens carry only those.
    token = issue_token("BOOKING_READ", legacy=True)
    assert_success(call(client, "get", "/v2/bookings", token), "BookingsApi")
    response = call(client, "post", "/v2/bookings", token)
    assert_insufficient_scope(response, required="BOOKING_WRITE", granted="BOOKING_READ")
    response = call(client, "get", "/v2/undeclared", token)
    assert_insufficient_scope(response, required=None, granted="BOOKING_READ")


def test_a_legacy_client_authorized_without_scopes_gets_an_unrestricted_token(client, browser, api, legacy, end_user):
    app, secret = legacy
    body = tokens_through_http(browser, api, app, secret, None)
    assert body["scope"] == ""
    for method, path, view in EVERY_ROUTE:
        assert assert_success(call(client, method, path, body["access_token"]), view)["user"] == end_user.pk


def test_a_legacy_client_authorized_with_scopes_gets_a_restricted_token(client, browser, api, legacy):
    app, secret = legacy
    body = tokens_through_http(browser, api, app, secret, "BOOKING_READ")
    assert_success(call(client, "get", "/v2/bookings", body["access_token"]), "BookingsApi")
    response = call(client, "get", TEAM, body["access_token"])
    assert_insufficient_scope(response, required="TEAM_BOOKING_READ", granted="BOOKING_READ")
