import pytest

from scopes.catalog import (
    SCOPES,
    ScopeLevel,
    UnknownScopeError,
    effective_scopes,
    grants_scope,
    group_by_level,
    parse_scopes,
)


def test_the_catalog_has_14_personal_18_team_and_14_organization_scopes():
    levels = [scope.level for scope in SCOPES.values()]
    assert levels.count(ScopeLevel.PERSONAL) == 14
    assert levels.count(ScopeLevel.TEAM) == 18
    assert levels.count(ScopeLevel.ORGANIZATION) == 14
    assert len(SCOPES) == 46


def test_every_scope_has_a_plain_language_description():
    for scope in SCOPES.values():
        assert scope.description and scope.description != scope.name
        assert (scope.level is ScopeLevel.TEAM) == scope.name.startswith("TEAM_")
        assert (scope.level is ScopeLevel.ORGANIZATION) == scope.name.startswith("ORG_")


@pytest.mark.parametrize(
    "raw",
    [
        "PROFILE_READ BOOKING_READ",
        "PROFILE_READ,BOOKING_READ",
        "PROFILE_READ, BOOKING_READ",
        " PROFILE_READ ,,BOOKING_READ  ",
    ],
)
def test_it_parses_space_and_comma_separated_scopes(raw):
    assert parse_scopes(raw) == ["PROFILE_READ", "BOOKING_READ"]


def test_it_drops_duplicates_keeping_first_order():
    assert parse_scopes("BOOKING_READ PROFILE_READ,BOOKING_READ PROFILE_READ") == ["BOOKING_READ", "PROFILE_READ"]


def test_it_reports_unknown_scopes_by_name():
    with pytest.raises(UnknownScopeError) as exc:
        parse_scopes("PROFILE_READ,CALENDAR_NUKE profile_read")
    assert exc.value.names == ["CALENDAR_NUKE", "profile_read"]
    assert "CALENDAR_NUKE" in str(exc.value) and "profile_read" in str(exc.value)


def test_empty_or_missing_scope_parameter_parses_to_nothing():
    assert parse_scopes("") == []
    assert parse_scopes(None) == []
    assert parse_scopes(" , ") == []


def test_an_oversized_scope_parameter_is_refused():
    with pytest.raises(UnknownScopeError):
        parse_scopes("PROFILE_READ " * 1000)


def test_an_org_scope_grants_the_matching_team_scope():
    assert grants_scope(["ORG_PROFILE_READ"], "TEAM_PROFILE_READ")
    assert grants_scope(["ORG_BOOKING_WRITE"], "TEAM_BOOKING_WRITE")


def test_an_org_scope_does_not_grant_other_team_scopes_or_write_from_read():
    assert not grants_scope(["ORG_PROFILE_READ"], "TEAM_PROFILE_WRITE")
    assert not grants_scope(["ORG_PROFILE_READ"], "TEAM_BOOKING_READ")
    assert not grants_scope(["ORG_PROFILE_READ"], "PROFILE_READ")


def test_a_team_scope_does_not_grant_the_org_scope():
    assert not grants_scope(["TEAM_PROFILE_READ"], "ORG_PROFILE_READ")


def test_org_scopes_without_a_team_twin_imply_nothing_extra():
    # ORG_WEBHOOK_READ has no TEAM_WEBHOOK_READ in the catalog.
    assert effective_scopes(["ORG_WEBHOOK_READ"]) == frozenset({"ORG_WEBHOOK_READ"})


def test_scopes_group_by_level_in_catalog_order():
    groups = group_by_level(["ORG_PROFILE_READ", "PROFILE_READ", "TEAM_BOOKING_READ", "BOOKING_READ"])
    assert [level for level, _, _ in groups] == [ScopeLevel.PERSONAL, ScopeLevel.TEAM, ScopeLevel.ORGANIZATION]
    assert [s.name for s in groups[0][2]] == ["BOOKING_READ", "PROFILE_READ"]
    assert SCOPES["ORG_PROFILE_READ"].implied_team_scope.name == "TEAM_PROFILE_READ"


# --- the catalog as data, for services in any language ---


def test_the_packaged_catalog_json_is_the_catalog():
    import json
    from pathlib import Path

    from scopes.catalog import SCOPES, catalog_document

    packaged = json.loads((Path(__file__).resolve().parents[2] / "scopes" / "catalog.json").read_text())
    assert packaged == catalog_document(), "regenerate scopes/catalog.json from scopes.catalog.catalog_document()"
    assert [scope["name"] for scope in packaged["scopes"]] == list(SCOPES)
    implied = {rule["scope"]: rule["also_grants"] for rule in packaged["rules"]["implies"]}
    assert implied["ORG_BOOKING_READ"] == "TEAM_BOOKING_READ" and "ORG_WEBHOOK_READ" not in implied


def test_get_v2_scopes_serves_it_publicly_and_cacheably(client, db):
    from scopes.catalog import catalog_document

    response = client.get("/v2/scopes")
    assert response.status_code == 200 and response.json() == catalog_document()
    assert response["Cache-Control"] == "public, max-age=3600"
    assert {scope["level"] for scope in response.json()["scopes"]} == {"personal", "team", "organization"}
