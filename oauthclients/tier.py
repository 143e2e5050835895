"""The unverified tier: what a self-registered client may get before an administrator approves it.

A client that registered itself (RFC 7591, or a client ID metadata document) is *unverified*: any
user may authorize it at once, but only for scopes within settings.OAUTH_UNVERIFIED_SCOPES (by
default the personal *_READ scopes). The authorization request, the code exchange and the refresh
each refuse a scope beyond it with `invalid_scope`, so a ceiling lowered after a grant binds the
next refresh too. Approval lifts it (status approved); rejection ends every token.
"""

from django.conf import settings

from oauthclients.models import OAuthClient
from scopes.catalog import OPENID_SCOPES


def unverified_ceiling() -> frozenset[str]:
    # The OpenID Connect scopes read only who the user is (userinfo: name, username, email, time
    # zone, language) and change nothing: always within the ceiling (docs/openid-connect.md).
    return frozenset(settings.OAUTH_UNVERIFIED_SCOPES) | frozenset(OPENID_SCOPES)


def beyond_ceiling(client: OAuthClient | None, scopes) -> list[str]:
    """The scopes among `scopes` an unverified client may not get (empty for any other client)."""
    if client is None or not client.is_unverified:
        return []
    ceiling = unverified_ceiling()
    return [name for name in scopes if name not in ceiling]


def _ceiling_text() -> str:
    return ", ".join(sorted(settings.OAUTH_UNVERIFIED_SCOPES)) or "no API scopes"


def ceiling_refusal(client: OAuthClient | None, scopes) -> str | None:
    """The `invalid_scope` description for scopes beyond an unverified client's ceiling, or None."""
    outside = beyond_ceiling(client, scopes)
    if not outside:
        return None
    return (
        "This application is unverified (it registered itself and has not been reviewed), so it can only "
        f"get {_ceiling_text()}; not {', '.join(outside)}."
    )
