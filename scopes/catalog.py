"""The 46 scopes of spec §2.3-2.5, their levels and their consent-screen descriptions.

Descriptions and labels are Django's lazy translations (the consent page shows them in the page's
language, docs/languages.md); as data (catalog_document: scopes/catalog.json, GET /v2/scopes, the
OpenAPI schema) they are English, whatever language is active.
"""

import re
from dataclasses import dataclass
from enum import StrEnum

from django.utils import translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class ScopeLevel(StrEnum):
    PERSONAL = "personal"
    TEAM = "team"
    ORGANIZATION = "organization"


LEVEL_LABELS = {
    ScopeLevel.PERSONAL: pgettext_lazy("scope level", "Personal"),
    ScopeLevel.TEAM: pgettext_lazy("scope level", "Team"),
    ScopeLevel.ORGANIZATION: pgettext_lazy("scope level", "Organization"),
}


@dataclass(frozen=True)
class Scope:
    name: str
    level: ScopeLevel
    description: str

    @property
    def implied_team_scope(self) -> "Scope | None":
        """The TEAM_ scope an ORG_ scope grants (spec §2.5), if there is one."""
        return SCOPES.get(org_to_team_name(self.name)) if self.level is ScopeLevel.ORGANIZATION else None


_P, _T, _O = ScopeLevel.PERSONAL, ScopeLevel.TEAM, ScopeLevel.ORGANIZATION

_CATALOG = [
    # §2.3 Personal
    Scope("EVENT_TYPE_READ", _P, _("List and view your event types and their private links")),
    Scope("EVENT_TYPE_WRITE", _P, _("Create, update and delete your event types and manage their private links")),
    Scope(
        "BOOKING_READ",
        _P,
        _("List your bookings and view their recordings, transcripts, calendar links and references"),
    ),
    Scope("BOOKING_WRITE", _P, _("Add guests to, change the location of, confirm, decline and reassign your bookings")),
    Scope("SCHEDULE_READ", _P, _("List and view your schedules")),
    Scope("SCHEDULE_WRITE", _P, _("Create, update and delete your schedules")),
    Scope(
        "APPS_READ", _P, _("List your connected calendars, check busy times and ICS feeds, verify calendar connections")
    ),
    Scope(
        "APPS_WRITE", _P, _("Save ICS feeds, connect calendars, save Apple calendar credentials, disconnect calendars")
    ),
    Scope("PROFILE_READ", _P, _("View your profile")),
    Scope("PROFILE_WRITE", _P, _("Update your profile")),
    Scope("WEBHOOK_READ", _P, _("List and view your webhooks")),
    Scope("WEBHOOK_WRITE", _P, _("Create, update and delete your webhooks")),
    Scope("VERIFIED_RESOURCES_READ", _P, _("List your verified email addresses and phone numbers")),
    Scope("VERIFIED_RESOURCES_WRITE", _P, _("Request verification codes and verify email addresses and phone numbers")),
    # §2.4 Team
    Scope("TEAM_EVENT_TYPE_READ", _T, _("View your teams' event types")),
    Scope("TEAM_EVENT_TYPE_WRITE", _T, _("Create, edit and delete your teams' event types")),
    Scope("TEAM_BOOKING_READ", _T, _("View your teams' bookings")),
    Scope("TEAM_BOOKING_WRITE", _T, _("Create, edit and delete your teams' bookings")),
    Scope("TEAM_SCHEDULE_READ", _T, _("View your teams' schedules")),
    Scope("TEAM_SCHEDULE_WRITE", _T, _("Create, edit and delete your teams' schedules")),
    Scope("TEAM_PROFILE_READ", _T, _("View your teams' profiles")),
    Scope("TEAM_PROFILE_WRITE", _T, _("Create, edit and delete teams")),
    Scope("TEAM_MEMBERSHIP_READ", _T, _("View your teams' memberships")),
    Scope("TEAM_MEMBERSHIP_WRITE", _T, _("Create, edit and delete your teams' memberships")),
    Scope("TEAM_APPS_READ", _T, _("View your teams' connected apps")),
    Scope("TEAM_APPS_WRITE", _T, _("Connect and disconnect your teams' apps")),
    Scope("TEAM_ROUTING_FORM_READ", _T, _("View your teams' routing forms")),
    Scope("TEAM_ROUTING_FORM_WRITE", _T, _("Create, edit and delete your teams' routing form responses")),
    Scope("TEAM_WORKFLOW_READ", _T, _("View your teams' workflows")),
    Scope("TEAM_WORKFLOW_WRITE", _T, _("Create, edit and delete your teams' workflows")),
    Scope("TEAM_VERIFIED_RESOURCES_READ", _T, _("View your teams' verified email addresses and phone numbers")),
    Scope("TEAM_VERIFIED_RESOURCES_WRITE", _T, _("Verify email addresses and phone numbers for your teams")),
    # §2.5 Organization
    Scope("ORG_EVENT_TYPE_READ", _O, _("View all event types across your organization")),
    Scope("ORG_EVENT_TYPE_WRITE", _O, _("Create, edit and delete event types across your organization")),
    Scope("ORG_BOOKING_READ", _O, _("View all bookings across your organization")),
    Scope("ORG_BOOKING_WRITE", _O, _("Create, edit and delete bookings across your organization")),
    Scope("ORG_SCHEDULE_READ", _O, _("View schedules across your organization")),
    Scope("ORG_SCHEDULE_WRITE", _O, _("Create, edit and delete schedules across your organization")),
    Scope("ORG_PROFILE_READ", _O, _("View your organization's teams")),
    Scope("ORG_PROFILE_WRITE", _O, _("Create, edit and delete your organization's teams")),
    Scope("ORG_MEMBERSHIP_READ", _O, _("View your organization's memberships and users")),
    Scope("ORG_MEMBERSHIP_WRITE", _O, _("Create, edit and delete your organization's memberships and users")),
    Scope("ORG_ROUTING_FORM_READ", _O, _("View your organization's routing forms")),
    Scope("ORG_ROUTING_FORM_WRITE", _O, _("Create, edit and delete your organization's routing form responses")),
    Scope("ORG_WEBHOOK_READ", _O, _("View your organization's webhooks")),
    Scope("ORG_WEBHOOK_WRITE", _O, _("Create, edit and delete your organization's webhooks")),
]

SCOPES: dict[str, Scope] = {scope.name: scope for scope in _CATALOG}
SCOPE_NAMES: tuple[str, ...] = tuple(SCOPES)

# OpenID Connect Core §5.4: the identity scopes. Not API scopes (no endpoint of the API accepts
# them, and the catalog stays the API's 46): every client may ask for them, a token carrying them
# reads only the userinfo endpoint, and `profile` and `email` need `openid` (docs/openid-connect.md).
OPENID_SCOPES: dict[str, str] = {
    "openid": _("Sign you in with your scheduling account (your account's identifier)"),
    "profile": _("See your name, username, time zone and language"),
    "email": _("See your email address"),
}

# A scope parameter is at most this many characters; the catalog joined takes about 900.
MAX_SCOPE_PARAM_LENGTH = 2000
_SEPARATORS = re.compile(r"[\s,]+")


class UnknownScopeError(ValueError):
    """A scope parameter named scopes that are not in the catalog."""

    def __init__(self, names: list[str]):
        self.names = names
        super().__init__("Unknown scope" + ("s" if len(names) > 1 else "") + ": " + ", ".join(names))


def parse_scopes(raw: str | None, *, openid: bool = False) -> list[str]:
    """Split a space- or comma-separated scope parameter; drop duplicates; refuse unknown names.

    Order of first appearance is kept so that what the user is shown follows the request. With
    `openid`, the OpenID Connect scopes (OPENID_SCOPES) are known names too.
    """
    if raw is None:
        return []
    if len(raw) > MAX_SCOPE_PARAM_LENGTH:
        raise UnknownScopeError([f"(scope parameter longer than {MAX_SCOPE_PARAM_LENGTH} characters)"])
    names = list(dict.fromkeys(part for part in _SEPARATORS.split(raw) if part))
    unknown = [name for name in names if name not in SCOPES and not (openid and name in OPENID_SCOPES)]
    if unknown:
        raise UnknownScopeError([_printable(name) for name in unknown])
    return names


def _printable(name: str) -> str:
    # Names are echoed in error messages and redirect parameters: keep them short and ASCII.
    clean = "".join(ch if 0x20 < ord(ch) < 0x7F else "?" for ch in name)
    return clean if len(clean) <= 64 else clean[:61] + "..."


def org_to_team_name(name: str) -> str | None:
    """ORG_X -> TEAM_X when ORG_X is an organization scope (whether or not TEAM_X exists)."""
    return "TEAM_" + name[4:] if name.startswith("ORG_") else None


def effective_scopes(granted) -> frozenset[str]:
    """What a grant allows: the granted names plus the TEAM_ scopes their ORG_ scopes imply (§2.5)."""
    result = set(granted)
    for name in granted:
        team = org_to_team_name(name)
        if team in SCOPES:
            result.add(team)
    return frozenset(result)


def grants_scope(granted, required: str) -> bool:
    """True when a token granted `granted` may call an endpoint that requires `required`."""
    return required in effective_scopes(granted)


def sort_scopes(names) -> list[str]:
    """Catalog order: personal, then team, then organization, as the spec lists them."""
    order = {name: index for index, name in enumerate(SCOPE_NAMES)}
    return sorted(set(names), key=lambda name: order.get(name, len(order)))


def group_by_level(names) -> list[tuple[ScopeLevel, str, list[Scope]]]:
    """[(level, label, [Scope, ...]), ...] for the levels that have at least one of `names`."""
    wanted = set(names)
    groups = []
    for level in ScopeLevel:
        members = [scope for scope in _CATALOG if scope.level is level and scope.name in wanted]
        if members:
            groups.append((level, LEVEL_LABELS[level], members))
    return groups


# What each scope is about, by the name left once the level prefix and _READ/_WRITE are removed.
RESOURCE_LABELS = {
    "PROFILE": _("Profile"),
    "EVENT_TYPE": _("Event types"),
    "BOOKING": _("Bookings"),
    "SCHEDULE": _("Schedules"),
    "APPS": _("Calendars and apps"),
    "WEBHOOK": _("Webhooks"),
    "VERIFIED_RESOURCES": _("Verified emails and phone numbers"),
    "MEMBERSHIP": _("Memberships"),
    "ROUTING_FORM": _("Routing forms"),
    "WORKFLOW": _("Workflows"),
}


def scope_resource(name: str) -> str:
    """EVENT_TYPE for EVENT_TYPE_READ, TEAM_EVENT_TYPE_WRITE and ORG_EVENT_TYPE_READ."""
    for prefix in ("TEAM_", "ORG_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.rsplit("_", 1)[0]


def scope_is_write(name: str) -> bool:
    return name.endswith("_WRITE")


@dataclass(frozen=True)
class LevelAccess:
    """Read and/or write access to one resource at one level."""

    level: ScopeLevel
    read: Scope | None
    write: Scope | None

    @property
    def label(self) -> str:
        return LEVEL_LABELS[self.level]

    @property
    def scopes(self) -> list[Scope]:
        return [scope for scope in (self.read, self.write) if scope]

    @property
    def implied_team_scopes(self) -> list[Scope]:
        return [team for scope in self.scopes if (team := scope.implied_team_scope)]


@dataclass(frozen=True)
class ResourceAccess:
    """One resource (bookings, schedules, ...) and what a set of scopes allows on it, level by level."""

    key: str
    label: str
    levels: list[LevelAccess]

    @property
    def writes(self) -> bool:
        return any(access.write for access in self.levels)

    @property
    def organization_wide(self) -> bool:
        return any(access.level is ScopeLevel.ORGANIZATION for access in self.levels)

    @property
    def higher_risk(self) -> bool:
        """Changing data, or reaching a whole organization, is what a careful user should notice first."""
        return self.writes or self.organization_wide

    @property
    def scopes(self) -> list[Scope]:
        return [scope for access in self.levels for scope in access.scopes]


def group_by_resource(names) -> list[ResourceAccess]:
    """The scopes in `names` by resource (higher-risk resources first, then catalog order)."""
    wanted = set(names)
    order: list[str] = []
    by_resource: dict[str, dict[ScopeLevel, dict[str, Scope]]] = {}
    for scope in _CATALOG:
        if scope.name not in wanted:
            continue
        resource = scope_resource(scope.name)
        if resource not in by_resource:
            order.append(resource)
            by_resource[resource] = {}
        kind = "write" if scope_is_write(scope.name) else "read"
        by_resource[resource].setdefault(scope.level, {})[kind] = scope
    groups = [
        ResourceAccess(
            key=resource,
            label=RESOURCE_LABELS.get(resource, resource.replace("_", " ").capitalize()),
            levels=[
                LevelAccess(level=level, read=kinds.get("read"), write=kinds.get("write"))
                for level in ScopeLevel
                if (kinds := by_resource[resource].get(level))
            ],
        )
        for resource in order
    ]
    # sorted() is stable: within each risk class the catalog order stays.
    return sorted(groups, key=lambda group: not group.higher_risk)


def catalog_by_resource() -> list[ResourceAccess]:
    """Every scope of the catalog by resource, in catalog order (the developer's scope picker)."""
    groups = group_by_resource(SCOPE_NAMES)
    position = {scope_resource(name): index for index, name in reversed(list(enumerate(SCOPE_NAMES)))}
    return sorted(groups, key=lambda group: position[group.key])


def catalog_document() -> dict:
    """The catalog as data, for services in any language: scopes/catalog.json and GET /v2/scopes.
    Always in English (the descriptions' own words), whichever language a page made active."""
    with translation.override(None):
        return _catalog_document()


def _catalog_document() -> dict:
    return {
        "scopes": [
            {
                "name": scope.name,
                "description": str(scope.description),
                "level": str(scope.level),
                "resource": scope_resource(scope.name),
                "access": "write" if scope_is_write(scope.name) else "read",
            }
            for scope in _CATALOG
        ],
        "rules": {
            "implies": [
                {"scope": scope.name, "also_grants": scope.implied_team_scope.name}
                for scope in _CATALOG
                if scope.implied_team_scope is not None
            ],
            "read_methods": ["GET", "HEAD"],
            "route_levels": {
                "team": ["/v2/teams/{teamId}/…", "/v2/organizations/{orgId}/teams/{teamId}/…"],
                "organization": ["/v2/organizations/{orgId}/… (not a team)"],
                "personal": ["every other path"],
            },
            "name": "{ORG_|TEAM_|}{RESOURCE}_{READ|WRITE}; a name that is not listed does not exist, so its "
            "route opens to no token",
            "unrestricted": "an access token with an empty scope (a legacy app's, `unrestricted: true`) passes "
            "every scoped route",
        },
    }
