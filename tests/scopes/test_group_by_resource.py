"""Scopes by resource for the consent screen and the scope picker."""

from scopes.catalog import SCOPE_NAMES, ScopeLevel, catalog_by_resource, group_by_resource


def test_read_and_write_of_one_resource_share_a_row_per_level():
    (bookings,) = group_by_resource(["BOOKING_READ", "BOOKING_WRITE", "TEAM_BOOKING_READ"])
    assert bookings.label == "Bookings"
    personal, team = bookings.levels
    assert (personal.level, personal.read.name, personal.write.name) == (
        ScopeLevel.PERSONAL,
        "BOOKING_READ",
        "BOOKING_WRITE",
    )
    assert (team.level, team.read.name, team.write) == (ScopeLevel.TEAM, "TEAM_BOOKING_READ", None)


def test_write_or_organization_access_is_higher_risk_and_listed_first():
    groups = group_by_resource(["PROFILE_READ", "SCHEDULE_WRITE", "ORG_WEBHOOK_READ"])
    assert [(group.label, group.higher_risk) for group in groups] == [
        ("Schedules", True),
        ("Webhooks", True),
        ("Profile", False),
    ]
    assert groups[0].writes and not groups[0].organization_wide
    assert groups[1].organization_wide and not groups[1].writes


def test_an_org_scope_names_the_team_scope_it_implies():
    (bookings,) = group_by_resource(["ORG_BOOKING_WRITE"])
    assert [scope.name for scope in bookings.levels[0].implied_team_scopes] == ["TEAM_BOOKING_WRITE"]
    (webhooks,) = group_by_resource(["ORG_WEBHOOK_READ"])
    assert webhooks.levels[0].implied_team_scopes == []  # there is no TEAM_WEBHOOK_READ


def test_the_whole_catalog_is_covered_once_in_catalog_order():
    groups = catalog_by_resource()
    assert sorted(scope.name for group in groups for scope in group.scopes) == sorted(SCOPE_NAMES)
    assert [group.label for group in groups][:3] == ["Event types", "Bookings", "Schedules"]
