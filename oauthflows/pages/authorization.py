"""Validation of an authorization request (spec §4.1, RFC 6749 §4.1.1, RFC 7636, SECURITY.md).

Run on the GET that shows the consent page and again, in full, on the POST that answers it:
nothing the browser sends back can widen what is granted.
"""

from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import F, FilteredRelation, Q
from django.http import QueryDict
from django.utils.translation import gettext

from oauthclients.models import ClientKind, OAuthClient
from oauthclients.policy import Door, client_awaiting_review, client_may_act
from oauthclients.tier import ceiling_refusal
from oauthclients.validators import is_private_use_redirect
from oauthflows.registration.cimd import MetadataDocumentError, is_metadata_document_url, metadata_document_client
from oauthflows.token.oauth2 import CODE_CHALLENGE_RE, resource_refusal
from plumbing.compiled import CompiledQuery
from scopes.catalog import OPENID_SCOPES, UnknownScopeError, parse_scopes

MAX_STATE_LENGTH = 2048
SINGLE_VALUED = (
    "client_id",
    "redirect_uri",
    "state",
    "scope",
    "response_type",
    "code_challenge",
    "code_challenge_method",
    "nonce",
    "prompt",
    "max_age",
    "login_hint",
)
# OpenID Connect Core §3.1.2.1. `select_account` is served as `login` (logging in again is how an
# account is chosen here); `none` stands alone.
# OpenID Connect Core §3.1.2.1: the prompt values accepted, and published as prompt_values_supported
# (oauthflows.discovery.metadata), in this order.
PROMPT_VALUES = ("none", "login", "consent", "select_account")
MAX_NONCE_LENGTH = 255  # the grant's nonce column
MAX_LOGIN_HINT_LENGTH = 254
MAX_MAX_AGE = 10 * 365 * 24 * 3600


class AuthorizationPageError(Exception):
    """Shown to the user as a 400 page: the redirect target is not trustworthy (no redirect)."""

    def __init__(self, title: str, message: str, *, details: dict | None = None):
        super().__init__(message)
        self.title = title
        self.message = message
        self.details = details or {}


MAX_SHOWN_URI_LENGTH = 300


def _shown(uri: str) -> str:
    return uri if len(uri) <= MAX_SHOWN_URI_LENGTH else uri[:MAX_SHOWN_URI_LENGTH] + "…"


def redirect_uri_mismatch_hint(sent: str, registered: list[str]) -> str | None:
    """What almost matches, for the developer debugging a mismatch: port, scheme or trailing slash."""
    try:
        parts = urlsplit(sent)
        sent_port = parts.port
    except ValueError:
        return None
    for candidate in registered:
        try:
            other = urlsplit(candidate)
            other_port = other.port
        except ValueError:
            continue
        same_rest = (parts.path, parts.query) == (other.path, other.query)
        if parts.scheme == other.scheme and parts.hostname == other.hostname and same_rest and sent_port != other_port:
            return gettext("Only the port differs from the registered %(uri)s: ports must match exactly.") % {
                "uri": candidate
            }
        if parts.scheme != other.scheme and parts.netloc == other.netloc and same_rest:
            return gettext("Only the scheme differs from the registered %(uri)s.") % {"uri": candidate}
        if (parts.scheme, parts.netloc, parts.query) == (other.scheme, other.netloc, other.query) and (
            parts.path.rstrip("/") == other.path.rstrip("/")
        ):
            return gettext("Only a trailing slash differs from the registered %(uri)s.") % {"uri": candidate}
    return None


class AuthorizationRedirectError(Exception):
    """Sent back to the verified redirect_uri as ?error=...&error_description=...&state=...&iss=..."""

    def __init__(self, error: str, description: str, *, client: OAuthClient, redirect_uri: str, state: str | None):
        super().__init__(description)
        self.error = error
        self.description = description
        # Whose redirect URI: whether the browser is sent there is oauthclients.redirects' call.
        self.client = client
        self.redirect_uri = redirect_uri
        self.state = state


@dataclass(frozen=True)
class AuthorizationRequest:
    client: OAuthClient
    redirect_uri: str
    state: str | None
    scopes: list[str]  # empty only for a legacy client asking for unrestricted access
    code_challenge: str | None
    # RFC 8707: the audience the token will be bound to; empty: no audience (valid everywhere).
    resources: tuple[str, ...] = ()
    # OpenID Connect Core §3.1.2.1 (docs/openid-connect.md): the nonce goes into the ID token;
    # prompt, max_age and login_hint steer the login and the consent page (oauthflows.pages.views).
    nonce: str | None = None
    prompt: frozenset[str] = frozenset()
    max_age: int | None = None
    login_hint: str | None = None

    @property
    def is_openid(self) -> bool:
        return "openid" in self.scopes

    @property
    def api_scopes(self) -> list[str]:
        """The catalog scopes asked for, without OpenID Connect's."""
        return [name for name in self.scopes if name not in OPENID_SCOPES]

    @property
    def is_unrestricted(self) -> bool:
        return not self.scopes

    @property
    def redirect_host(self) -> str:
        # A native app's private-use scheme names the app (RFC 8252 §7.1): com.example.app.
        if is_private_use_redirect(self.redirect_uri):
            return self.redirect_uri.partition(":")[0]
        return urlsplit(self.redirect_uri).netloc

    def oauthlib_query(self) -> list[tuple[str, str]]:
        """The request in the one form oauthlib is given (see oauthflows.token.oauth2.Backend)."""
        query = [
            ("response_type", "code"),
            ("client_id", self.client.client_id),
            ("redirect_uri", self.redirect_uri),
        ]
        if self.scopes:
            query.append(("scope", " ".join(self.scopes)))
        if self.state is not None:
            query.append(("state", self.state))
        if self.code_challenge:
            query += [("code_challenge", self.code_challenge), ("code_challenge_method", "S256")]
        query += [("resource", uri) for uri in self.resources]
        if self.is_openid and self.nonce is not None:
            query.append(("nonce", self.nonce))
        return query


def authorization_request_validate(*, params: QueryDict, user) -> AuthorizationRequest:
    """Check every parameter; raise AuthorizationPageError or AuthorizationRedirectError."""
    client = _client(params, user)
    redirect_uri = _redirect_uri(params, client)
    # An empty state is no state: oauthlib leaves it out of the Allow redirect, so the Deny
    # redirect and error redirects leave it out too (RFC 6749 §4.1.2: echoed only if present).
    state = params.get("state") or None

    def fail(error: str, description: str):
        raise AuthorizationRedirectError(error, description, client=client, redirect_uri=redirect_uri, state=state)

    for name in SINGLE_VALUED:
        if len(params.getlist(name)) > 1:
            fail("invalid_request", f"The {name} parameter was sent more than once.")
    if state is not None and len(state) > MAX_STATE_LENGTH:
        raise AuthorizationRedirectError(
            "invalid_request",
            f"state can be at most {MAX_STATE_LENGTH} characters.",
            client=client,
            redirect_uri=redirect_uri,
            state=None,
        )

    response_type = params.get("response_type", "code")
    if response_type != "code":
        fail("unsupported_response_type", "Only response_type=code is supported.")

    scopes = _scopes(params, client, fail)
    code_challenge = _pkce(params, client, fail)
    resources = resources_validate(params.getlist("resource"), fail)
    return AuthorizationRequest(
        client=client,
        redirect_uri=redirect_uri,
        state=state,
        scopes=scopes,
        code_challenge=code_challenge,
        resources=resources,
        **openid_parameters_validate(params, fail),
    )


def openid_parameters_validate(params: QueryDict, fail) -> dict:
    """OpenID Connect Core §3.1.2.1: nonce, prompt, max_age, login_hint; `request` and
    `request_uri` (§6) are not supported. Checked for every request: `prompt` and `max_age` mean
    the same with or without `openid`."""
    if params.get("request") is not None:
        fail("request_not_supported", "Request objects (the request parameter) are not supported.")
    if params.get("request_uri") is not None:
        fail("request_uri_not_supported", "The request_uri parameter is not supported.")
    nonce = params.get("nonce")
    if nonce is not None and (not nonce or len(nonce) > MAX_NONCE_LENGTH or not nonce.isprintable()):
        fail("invalid_request", f"nonce must be 1-{MAX_NONCE_LENGTH} printable characters.")
    prompt = frozenset((params.get("prompt") or "").split())
    if prompt.difference(PROMPT_VALUES):
        fail("invalid_request", f"prompt can only hold {', '.join(PROMPT_VALUES)}.")
    if "none" in prompt and len(prompt) > 1:
        fail("invalid_request", "prompt=none cannot be combined with other prompt values.")
    raw_max_age = params.get("max_age")
    max_age = None
    if raw_max_age is not None:
        if not raw_max_age.isascii() or not raw_max_age.isdigit() or int(raw_max_age) > MAX_MAX_AGE:
            fail("invalid_request", "max_age must be a whole number of seconds (0 or more).")
        max_age = int(raw_max_age)
    login_hint = params.get("login_hint")
    if login_hint is not None and (len(login_hint) > MAX_LOGIN_HINT_LENGTH or not login_hint.isprintable()):
        fail("invalid_request", f"login_hint must be at most {MAX_LOGIN_HINT_LENGTH} printable characters.")
    return {"nonce": nonce, "prompt": prompt, "max_age": max_age, "login_hint": login_hint or None}


def resources_validate(values: list, fail) -> tuple[str, ...]:
    """RFC 8707 §2: the `resource` values (oauthflows.token.oauth2.resource_refusal), duplicates merged;
    else `fail("invalid_target", ...)`."""
    refusal = resource_refusal(values)
    if refusal:
        fail("invalid_target", refusal)
    return tuple(dict.fromkeys(values))


def _by_client_id(client_id: str):
    return OAuthClient.objects.filter(client_id=client_id)[:1]


def _by_client_id_with_standing(client_id: str, user_id: int):
    # The signed-in user's standing consent rides in the client's statement (a LEFT JOIN on the
    # unique (user, client) index): the consent page costs the floor's statements, not one more.
    mine = FilteredRelation("consents", condition=Q(consents__user_id=user_id))
    return (
        OAuthClient.objects.filter(client_id=client_id)
        .annotate(mine=mine)
        .annotate(
            standing_authorized_at=F("mine__last_authorized_at"),
            standing_scope=F("mine__scope"),
            standing_unrestricted=F("mine__unrestricted"),
        )[:1]
    )


# The authorization request's client, compiled once (plumbing/compiled.py): every column but
# the logo's bytes (the page links to /logos/, and DOT never reads them), with the owner's name
# for the consent page's "Developer" line.
_CLIENT_LOAD = {
    "": tuple(f.attname for f in OAuthClient._meta.concrete_fields if f.attname != "logo_png"),
    "user": ("username", "email", "first_name", "last_name"),
}
_CLIENT_QUERY = CompiledQuery(_by_client_id, load=_CLIENT_LOAD)
# The same client with the signed-in user's standing consent (tokens.consents.consent_standing).
_CLIENT_WITH_STANDING_QUERY = CompiledQuery(
    _by_client_id_with_standing,
    load=_CLIENT_LOAD,
    annotations=("standing_authorized_at", "standing_scope", "standing_unrestricted"),
)


def authorization_target_validate(*, params: QueryDict) -> OAuthClient:
    """Before asking anyone to log in: is this a client users may be sent to, and is the
    redirect_uri one of its own? Raises AuthorizationPageError otherwise, as Google does, so that a
    misconfigured app never collects a login it cannot use. (A pending client passes: its owner
    may be the one about to log in; the full validation follows the login.)"""
    client = _client(params, None, before_login=True)
    _redirect_uri(params, client)
    return client


def _client(params: QueryDict, user, *, before_login: bool = False) -> OAuthClient:
    client_ids = params.getlist("client_id")
    if not client_ids or not client_ids[0]:
        raise AuthorizationPageError(
            gettext("Missing client_id"), gettext("The authorization request has no client_id parameter.")
        )
    if len(client_ids) > 1:
        raise AuthorizationPageError(
            gettext("Invalid request"), gettext("The client_id parameter was sent more than once.")
        )
    client_id = client_ids[0]
    client = None
    if len(client_id) <= 255 and "\x00" not in client_id:
        if user is not None and user.is_authenticated:
            client = _CLIENT_WITH_STANDING_QUERY.first(client_id, user.pk)
            if client is not None:
                client.standing_user_id = user.pk
        else:
            client = _CLIENT_QUERY.first(client_id)
    if (
        settings.OAUTH_DYNAMIC_REGISTRATION != "off"
        and is_metadata_document_url(client_id)
        and (client is None or client.registration_source == OAuthClient.RegistrationSource.CIMD)
    ):
        # A client ID metadata document: fetched on first sight (and when stale), never redirected
        # to on failure, since the redirect URI would come from the document that failed.
        try:
            client = metadata_document_client(client_id, client)
        except MetadataDocumentError as exc:
            # The document's problem, for its developer: in English, as the metadata's fields are.
            raise AuthorizationPageError(gettext("Client metadata document refused"), str(exc)) from None
    if client is None or client.is_resource_server:
        # A resource server is no app a user can authorize: the same page as an unknown client.
        raise AuthorizationPageError(
            gettext("Unknown application"), gettext("No application is registered with this client_id.")
        )
    # Unverified: anyone may authorize it, within the ceiling (_scopes, oauthclients.tier). The
    # owner may try their own pending client before review; nobody else may (oauthclients.policy).
    if client_may_act(client, user, Door.BEFORE_LOGIN if before_login else Door.AUTHORIZE):
        return client
    # Neither page names the client: its name was never approved (SECURITY.md, "Review").
    if client_awaiting_review(client) and client.deleted_at is None:
        raise AuthorizationPageError(
            gettext("Application not yet approved"),
            gettext(
                "This application is awaiting review by the service's administrators and cannot be used yet; "
                "until then only its owner can test it."
            ),
        )
    raise AuthorizationPageError(
        gettext("Application not available"),
        gettext("This application has been rejected by the service's administrators."),
    )


def _redirect_uri(params: QueryDict, client: OAuthClient) -> str:
    uris = params.getlist("redirect_uri")
    if not uris or not uris[0]:
        raise AuthorizationPageError(
            gettext("Missing redirect_uri"), gettext("The authorization request has no redirect_uri parameter.")
        )
    if len(uris) > 1:
        raise AuthorizationPageError(
            gettext("Invalid request"), gettext("The redirect_uri parameter was sent more than once.")
        )
    # SECURITY.md: exact string match against the registered list, nothing looser.
    if not client.redirect_uri_allowed(uris[0]):
        # What a developer needs to debug it; registered redirect URIs are not secret (every
        # authorization request carries one).
        raise AuthorizationPageError(
            gettext("Redirect URI not registered"),
            gettext("The redirect_uri in this request is not one of the application's registered redirect URIs."),
            details={
                "sent": _shown(uris[0]),
                "registered": client.redirect_uri_list,
                "hint": redirect_uri_mismatch_hint(uris[0], client.redirect_uri_list),
            },
        )
    return uris[0]


def _scopes(params: QueryDict, client: OAuthClient, fail) -> list[str]:
    raw = params.get("scope")
    try:
        scopes = parse_scopes(raw, openid=True)
    except UnknownScopeError as exc:
        fail("invalid_scope", str(exc) + ".")
    if not scopes:
        if client.is_legacy:
            return []  # spec §5.6: a legacy client without scope gets an unrestricted token
        fail("invalid_scope", "The scope parameter is required: list the scopes the application needs.")
    if "openid" not in scopes and any(name in OPENID_SCOPES for name in scopes):
        # OpenID Connect Core §5.4: profile and email are claims of an OpenID request.
        fail("invalid_scope", "profile and email are OpenID Connect scopes: ask for openid with them.")
    # The unverified tier's refusal first: an agent stepping up (MCP 2025-11-25) beyond the
    # ceiling learns that review, not a registration update, is what would let it through.
    refusal = ceiling_refusal(client, scopes)
    if refusal:
        fail("invalid_scope", refusal)
    if not client.is_legacy:
        # Spec §4.1: a subset of the scopes enabled on the client. A legacy client may ask for any
        # known scope (migration step a, spec §5.8). The OpenID Connect scopes are every client's.
        outside = [name for name in scopes if name not in client.scope_list and name not in OPENID_SCOPES]
        if outside:
            fail("invalid_scope", "Not enabled for this application: " + ", ".join(outside) + ".")
    return scopes


def _pkce(params: QueryDict, client: OAuthClient, fail) -> str | None:
    challenge = params.get("code_challenge")
    method = params.get("code_challenge_method")
    if challenge is None or challenge == "":
        if method:
            fail("invalid_request", "code_challenge_method was sent without a code_challenge.")
        if client.client_type == ClientKind.PUBLIC:
            fail("invalid_request", "A public client must send a PKCE code_challenge (S256).")
        return None
    # RFC 9700 §2.1.1: S256 only; an absent method means S256 here (the spec names no other).
    if method not in (None, "S256"):
        fail("invalid_request", "Only code_challenge_method=S256 is supported.")
    if not CODE_CHALLENGE_RE.fullmatch(challenge):
        fail("invalid_request", "code_challenge must be 43 base64url characters (the S256 of the verifier).")
    return challenge
