"""Access tokens as resource requests and introspection see them: one compiled, indexed query by
digest, joined to what each needs."""

from django.db.models import QuerySet

from oauthclients.models import AccessToken, digest
from plumbing.compiled import CompiledQuery
from scopes.bearer import MAX_TOKEN_LENGTH  # the longest token issued and taken anywhere
from tokens.liveness import token_alive

# What a resource request in this process reads: the token, its client's status and the user with
# the profile /v2/me returns. Only these columns are loaded (building full client and user
# instances was a measurable share of GET /v2/me).
# What the bearer check and GET /v2/me read, per model of the joined row.
BEARER_COLUMNS = {
    "": ("expires", "scope", "created", "user_id", "application_id", "resource"),
    "application": ("client_id", "name", "status", "client_type", "user_id"),
    "user": ("username", "email", "first_name", "last_name", "is_active", "is_staff", "is_superuser"),
    "user__profile": ("name", "time_zone", "locale", "time_format", "week_start", "user_id"),
}
# What a resource server's introspection answers with (RFC 7662 §2.2).
INTROSPECTION_COLUMNS = {
    "": ("expires", "scope", "created", "user_id", "application_id", "resource", "act"),
    "application": ("client_id", "status"),
    "user": ("username", "is_active"),
}


def _by_digest(checksum: str) -> QuerySet[AccessToken]:
    return AccessToken.objects.filter(token_checksum=checksum)[:1]


# Compiled once per process (plumbing/compiled.py): one indexed query by digest, joined.
_BEARER_QUERY = CompiledQuery(_by_digest, load=BEARER_COLUMNS)
_INTROSPECTION_QUERY = CompiledQuery(_by_digest, load=INTROSPECTION_COLUMNS)


def _access_token_get_live(raw_token, query: CompiledQuery) -> AccessToken | None:
    """One indexed query by digest; alive or None (tokens.liveness: a token of a rejected client or
    an inactive user is dead at once; a client sent back to review by an edit keeps its tokens)."""
    if not isinstance(raw_token, str) or not raw_token or len(raw_token) > MAX_TOKEN_LENGTH:
        return None
    access_token = query.first(digest(raw_token))
    return access_token if token_alive(access_token) else None


def access_token_get_valid(raw_token) -> AccessToken | None:
    """The live access token for a presented bearer value, with its client, user and profile."""
    return _access_token_get_live(raw_token, _BEARER_QUERY)


def access_token_get_for_introspection(raw_token) -> AccessToken | None:
    """The live access token with the columns RFC 7662 claims are made of (client and user)."""
    return _access_token_get_live(raw_token, _INTROSPECTION_QUERY)
