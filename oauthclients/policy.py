"""Whether a client may act here: the one place the review states decide it (issue 39, "One policy
for clients and tokens").

Every door asks `client_may_act(client, user, door)`: the authorization request and its consent
page (oauthflows.pages.authorization, DOT's `is_usable`), the redirects and RP-initiated logout
(oauthclients.redirects, oauthflows.pages.logout), client authentication at the token, revocation
and introspection endpoints, and the grants that issue a token for a user (the code and refresh
grants, the token exchange, ID-JAG). The rule, by review state:

- approved: yes;
- pending (awaiting review): only for its owner, who tests it before review; at client
  authentication, yes (what it then redeems is held to its owner's own grants by the GRANT door),
  and before the login of an authorization request, yes (the owner is asked once signed in);
- unverified (self-registered): yes, within the unverified ceiling (oauthclients.tier, on the
  scopes); its redirect URIs only once the user saw its consent page, never at logout;
- rejected, and a deleted client (deletion rejects it too): never.

Where the copies this replaced disagreed, the stricter rule won (tests/oauthclients/test_policy.py):
a deleted pending client no longer reaches its owner's authorization page, and ID-JAG no longer
issues for a pending client to anyone but its owner.

What a token already issued keeps is another question (a client sent back to review keeps its
tokens; only a rejection ends them): `client_tokens_end`, read by tokens.liveness.token_alive.

The review states themselves are defined here, with what each lets a client do; the database's
copies of this rule (the status list trigger on rejection, the exchange's target) are registered
SQL twins (plumbing.handwritten), compared with these functions by tests/test_sql_twins.py.
"""

import enum

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class ClientStatus(models.TextChoices):
    PENDING = "pending", _("Pending review")
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")
    # Self-registered (RFC 7591 registration or a client ID metadata document): usable by anyone at
    # once, but only within settings.OAUTH_UNVERIFIED_SCOPES, under a warning, until approved.
    UNVERIFIED = "unverified", _("Unverified (self-registered)")


# The statuses a user may authorize (and DOT may issue to): approved, or unverified within the
# ceiling of oauthclients.tier. Read by the model's `can_be_authorized` and the web origins' sync.
AUTHORIZABLE_STATUSES = (ClientStatus.APPROVED, ClientStatus.UNVERIFIED)


class Door(enum.Enum):
    """Where a client asks to act."""

    # The authorization request once the user is known, its consent page and DOT's check of it.
    AUTHORIZE = "authorize"
    # The authorization request before the login: a pending client passes, to be asked again
    # (AUTHORIZE) once the person signed in is known to be its owner or not.
    BEFORE_LOGIN = "before login"
    # Sending the browser to one of its registered URIs without a page of ours (RFC 9700 §4.11.2;
    # oauthclients.redirects): an unverified client only after its consent page was shown.
    REDIRECT = "redirect"
    # Client authentication at the token, revocation and introspection endpoints: a pending client
    # authenticates; the grant it then asks for is the GRANT door's.
    CLIENT_AUTHENTICATION = "client authentication"
    # A token issued for `user`: the code and refresh grants, the token exchange, ID-JAG.
    GRANT = "grant"


BROWSER_DOORS = (Door.AUTHORIZE, Door.BEFORE_LOGIN, Door.REDIRECT)


def _owner(client, user) -> bool:
    return bool(getattr(user, "is_authenticated", False)) and user.pk == client.user_id


def client_may_act(client, user, door: Door, *, consent_shown: bool = False) -> bool:
    """Whether `client` may act at `door` for `user` (the signed-in person at a browser's door,
    the token's person at GRANT; None when nobody is known). `consent_shown`: REDIRECT only."""
    if client is None or client.deleted_at is not None:
        return False
    if door in BROWSER_DOORS and client.is_resource_server:
        return False  # no app a person authorizes or is sent to
    status = client.status
    if status == ClientStatus.APPROVED:
        return True
    if status == ClientStatus.UNVERIFIED:
        # What it may get is capped by the ceiling on its scopes (oauthclients.tier), door by door.
        return consent_shown if door is Door.REDIRECT else True
    if status == ClientStatus.PENDING:
        if door in (Door.BEFORE_LOGIN, Door.CLIENT_AUTHENTICATION):
            return True
        return _owner(client, user)
    return False  # rejected


def client_awaiting_review(client) -> bool:
    """Pending: what the pages tell its owner (its owner's preview, not what users are shown)."""
    return client.status == ClientStatus.PENDING


def client_claims_without_owner_check(client) -> bool:
    """Whether a redemption may take the one-statement claim (tokens.redemption), whose WHERE
    clause knows nothing of the client's owner: an approved client, for whom client_may_act at
    GRANT holds whoever the user is; any other takes the full path and its checks."""
    return client is not None and client.status == ClientStatus.APPROVED


def client_tokens_end(client) -> bool:
    """Whether the tokens this client already holds are dead: rejected (deleted included), or no
    client at all. A client sent back to review by an edit keeps them (tokens.liveness)."""
    return client is None or client.status == ClientStatus.REJECTED


def client_serves_q(relation: str = "") -> Q:
    """The clients (through `relation`) that stand as reviewed: approved and not deleted. A resource
    server a token may be bound to (RFC 8707), exchanged toward (RFC 8693) or issued as a JWT for;
    an app whose approved name and logo are shown to users."""
    prefix = f"{relation}__" if relation else ""
    return Q(**{f"{prefix}status": ClientStatus.APPROVED, f"{prefix}deleted_at__isnull": True})


def client_tokens_live_q(relation: str) -> Q:
    """client_tokens_end's twin for querysets: rows whose client (through `relation`) keeps its tokens."""
    return Q(**{f"{relation}__isnull": False}) & ~Q(**{f"{relation}__status": ClientStatus.REJECTED})
