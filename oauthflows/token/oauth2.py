"""The hooks into django-oauth-toolkit's and oauthlib's token machinery: validator, backend, token generator.

Not every hook: the swapped models answer DOT's own questions (oauthclients/models/clients.py:
`is_usable`, `redirect_uri_allowed`, `jwk_key`), and DOT's views are subclassed where they serve a
page or document: the consent page (oauthflows/pages/views.py), registration
(oauthflows/registration/dynamic.py), OpenID discovery (oauthflows/discovery/metadata.py), userinfo
(userinfo.py, beside this module) and logout (oauthflows/pages/logout.py), client ID metadata documents
(oauthflows/registration/cimd.py).

What DOT does well (client authentication plumbing, refresh rotation, token families, reuse
protection, RFC 9207 `iss`) is kept; what this server needs on top is added in overrides:

- client secrets: one or two per client in ClientSecret, compared by SHA-256 digest;
- authorization codes stored as digests, single use under a row lock, replay detection;
- PKCE: S256 only, strict verifier syntax, downgrade refused both ways (RFC 9700 §2.1.1);
- refresh: the presented token is locked, so concurrent refreshes have exactly one winner;
- `is_pkce_required` for public clients only; the redirect URI is required at the token endpoint;
- OpenID Connect (docs/openid-connect.md): ID tokens signed by the one key store
  (signing.keys), with the grant's nonce, auth_time and sid; `Server` sends every code
  exchange through oauthlib's OpenID grant, which adds nothing unless `openid` was granted.
"""

import contextvars
import json
import re
import secrets
import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django.utils.module_loading import import_string
from jwcrypto import jwk, jws, jwt
from oauth2_provider.exceptions import FatalClientError, OAuthToolkitError
from oauth2_provider.models import revoke_access_token
from oauth2_provider.oauth2_backends import OAuthLibCore, _add_iss_to_redirect
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauthlib.common import Request
from oauthlib.oauth2.rfc6749 import errors
from oauthlib.oauth2.rfc6749.grant_types import AuthorizationCodeGrant
from oauthlib.openid import Server as OpenIDServer

from accounts.selectors import acr_for
from oauthclients.audit import audit_record
from oauthclients.models import (
    AccessToken,
    AuditAction,
    ClientKind,
    ClientSecret,
    Grant,
    IDToken,
    RefreshToken,
    digest,
)
from oauthclients.policy import Door, client_claims_without_owner_check, client_may_act
from oauthclients.selectors import resource_uri_known
from oauthclients.tier import ceiling_refusal
from oauthclients.validators import resource_uri_problem
from oauthflows.grants import GRANTS, CodeState, GrantState, RefreshState, SingleTokenState, grant_state
from oauthflows.token.clientcall import client_call, issued_tell
from plumbing.compiled import CompiledQuery
from plumbing.requestparams import basic_credentials, request_json_pairs
from scopes.bearer import MAX_TOKEN_LENGTH
from scopes.verifiers import audience_includes
from signing.jwtokens import NoSigningKey, TokenTooLong, access_token_jwt, issues_jwt
from signing.keys import jwks_document, private_key, signing_key_current
from tokens.consents import consent_record
from tokens.liveness import Ended, token_alive, token_ended
from tokens.redemption import grant_claim, refresh_token_claim
from tokens.selectors import access_token_get_for_introspection, access_token_get_valid
from tokens.services import Lineage, access_token_issue

# RFC 7636 §4.1 / §4.2: verifier 43-128 unreserved characters; S256 challenge is 43 base64url chars.
CODE_VERIFIER_RE = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
CODE_CHALLENGE_RE = re.compile(r"[A-Za-z0-9_-]{43}")
MAX_RESOURCES = 5  # RFC 8707 `resource` values in one request

# When the current token request started (set by the token endpoint). See _is_concurrent_duplicate.
request_started_at: contextvars.ContextVar[datetime | None] = contextvars.ContextVar("request_started_at", default=None)


# Attributes that these hooks, DOT and oauthlib set on (or read from) oauthlib's Request while
# a token, revocation or introspection request is processed.
HOOK_REQUEST_ATTRIBUTES = frozenset(
    {
        "grant_state",  # the grant's typed state (oauthflows.grants)
        "auth_time",
        "sid",
        "amr",
        "_json_body_pairs",
        "refresh_token_instance",
        "pending_client_may_authenticate",
        "pending_owner_preview",
        "record_consent",
        "access_token",
        "client",
        "user",
        "scopes",
        "claims",
        "resource",
        "id_token",
        "token_type",
        "using_default_redirect_uri",
        "extra_credentials",
        "method",
        "path",
    }
)


def request_attribute_names() -> frozenset[str]:
    """Every name under which oauthlib's Request answers an attribute lookup.

    oauthlib's Request serves every query and body parameter as an attribute (`__getattr__`), so a
    parameter named like an attribute that is set later (`client`, `grant_state`,
    `refresh_token_instance`, ...) would be read in its place by code that runs before it is set.
    The endpoints refuse such names unless they are parameters the endpoint takes.
    """
    sample = Request("https://example.invalid/")
    names = {name for name in dir(sample) if not name.startswith("__")}
    return frozenset(names | set(sample._params) | HOOK_REQUEST_ATTRIBUTES)


def generate_token(request=None) -> str:
    """Access and refresh tokens: 256 bits from `secrets` (SECURITY.md asks for >= 128)."""
    return secrets.token_urlsafe(32)


def _state(request) -> GrantState:
    """The grant's typed state (oauthflows.grants); a bare one if the grant set none."""
    state = grant_state(request, GrantState)
    if state is None:
        state = request.grant_state = GrantState()
    return state


def _code_state(request) -> CodeState:
    """The authorization_code grant's state, begun by the first hook that needs it."""
    state = grant_state(request, CodeState)
    if state is None:
        state = request.grant_state = CodeState()
    return state


def _code_grant(request) -> Grant | None:
    """The code's grant row, as validate_code loaded or claimed it (no second read)."""
    state = grant_state(request, CodeState)
    return state.grant if state is not None else None


def _authenticated_at(request) -> datetime | None:
    """When the user logged in for this grant: the presented refresh token's record on refresh,
    the code's on exchange, the subject's or the assertion's (None when it was not recorded)."""
    state = grant_state(request, GrantState)
    return state.login_time() if state is not None else None


def generate_access_token(request=None) -> str:
    """DOT's ACCESS_TOKEN_GENERATOR: an RFC 9068 JWT when the token's audience names only
    resource servers registered for JWTs (signing.jwtokens), else an opaque token."""
    audience = _resource_list(request) if request is not None else []
    if not issues_jwt(audience):
        return generate_token()
    state = _state(request)
    # RFC 8693 (oauthflows.token.exchange) and ID-JAG: the token's own lifetime, and `act`.
    single = state if isinstance(state, SingleTokenState) else None
    authenticated = state.login_time()
    try:
        token, state.jwt_status = access_token_jwt(
            user_pk=request.user.pk,
            client_id=request.client.client_id,
            scope=" ".join(request.scopes or []),
            audience=audience,
            # When no login time was recorded (a session or refresh token from before it was), the
            # time of issue: the user's consent or the refresh is then the latest known presence.
            auth_time=int(authenticated.timestamp()) if authenticated else int(time.time()),
            lifetime=single.lifetime if single else oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS,
            act=single.act if single else None,
        )
    except NoSigningKey as exc:
        raise errors.InvalidRequestError(
            description=f"Access tokens for this resource cannot be signed now: this server has no {exc} signing key.",
            request=request,
        ) from None
    except TokenTooLong:
        raise errors.CustomOAuth2Error(
            error="invalid_target",
            description=f"The access token for these resources would be longer than {MAX_TOKEN_LENGTH} characters, "
            "which no service accepts: ask for fewer resources or scopes.",
            request=request,
        ) from None
    return token


def _is_concurrent_duplicate(consumed_at: datetime | None) -> bool:
    """A second presentation that raced the first one: refused, but not treated as theft.

    Refresh tokens only (codes are strictly single use, see validate_code). A refresh token
    consumed while this request was already running, or less than
    OAUTH_REPLAY_GRACE_SECONDS before it started, was sent twice at about the same time (a retry,
    two workers, a double click): requests queued in front of busy server processes start late,
    so "already running" alone misses them. Later presentations are replays and revoke the
    family (RFC 9700 §4.14.2). The same trade-off as the "reuse interval" of other providers.
    """
    started = request_started_at.get()
    if consumed_at is None or started is None:
        return False
    return consumed_at >= started - timedelta(seconds=settings.OAUTH_REPLAY_GRACE_SECONDS)


PENDING_CLIENT_OWNER_ONLY = (
    "This application is awaiting review; until it is approved it can get tokens for its owner's account only."
)


def _resource_list(request) -> list[str]:
    value = getattr(request, "resource", None)
    return list(value) if isinstance(value, list | tuple) else []


def _requested_resources(request) -> list[str]:
    """Every `resource` of a token request (RFC 8707 lets it repeat; oauthlib keeps only the last)."""
    return [value for key, value in (getattr(request, "decoded_body", None) or []) if key == "resource"]


def resource_refusal(values: list, *, granted: list[str] = ()) -> str | None:
    """Why these RFC 8707 `resource` values are `invalid_target`, or None. One rule for the
    authorization request and the token request: at most MAX_RESOURCES; each a well-formed
    resource URI (the own API's as configured); within `granted` when the grant has an audience
    (narrow, never widen), else a protected resource this server knows (resource_uri_known)."""
    if len(values) > MAX_RESOURCES:
        return f"At most {MAX_RESOURCES} resource parameters can be sent."
    for uri in values:
        if not isinstance(uri, str) or (uri != settings.OAUTH_RESOURCE_URI and resource_uri_problem(uri)):
            problem = resource_uri_problem(uri) if isinstance(uri, str) else "must be a string"
            return f"The resource {str(uri)[:200]!r} {problem} (RFC 8707)."
        if granted and uri not in granted:
            return (
                f"The resource {uri!r} was not part of the authorization: a token request can narrow the "
                "audience, never widen it."
            )
        if not granted and not resource_uri_known(uri):
            return f"The resource {uri!r} is not a protected resource of this server."
    return None


def _audience_set(request, granted: list[str]) -> None:
    """RFC 8707 §2.2: the new access token's audience, on `request.resource`.

    What the grant (code) or the presented refresh token was bound to, or a subset of it named in
    `resource`; a grant without audience may be bound at the token request, to known resources only.
    """
    requested = _requested_resources(request)
    refusal = resource_refusal(requested, granted=granted)
    if refusal:
        raise errors.CustomOAuth2Error(error="invalid_target", description=refusal, request=request)
    request.resource = list(dict.fromkeys(requested)) or list(granted)


def _mark_claimed() -> None:
    call = client_call.get()
    if call is not None:
        call.claimed = True


def _within_ceiling(client, scopes, request) -> None:
    """An unverified client gets nothing beyond the ceiling, at exchange and refresh alike
    (oauthclients.tier): a code or refresh token from before the ceiling was lowered included."""
    refusal = ceiling_refusal(client, scopes)
    if refusal:
        raise errors.InvalidScopeError(description=refusal, request=request)


def _active_secret(secret_digest: str, client_id: str) -> QuerySet[ClientSecret]:
    return ClientSecret.objects.filter(digest=secret_digest, revoked_at__isnull=True, client__client_id=client_id)[:1]


# Client authentication's one query, compiled once (plumbing/compiled.py): the active secret
# with this digest joined to its whole client (oauthlib and DOT read the client afterwards).
_SECRET_QUERY = CompiledQuery(_active_secret, load={"": None, "client": None})


class Validator(OAuth2Validator):
    # --- client authentication -------------------------------------------------------------

    # The token, revocation and introspection endpoints start with one of these three hooks. Each
    # sets `pending_client_may_authenticate`: DOT's OAuthClient.is_usable (and authenticate_client
    # itself) then ask oauthclients.policy at its CLIENT_AUTHENTICATION door, which lets a *pending*
    # client authenticate here (any pending client, whoever it belongs to), because what it may then
    # redeem is held to its owner's own grants by the policy's GRANT door right below, which
    # validate_code and validate_refresh_token call. The two halves of one rule, side by side.

    def client_authentication_required(self, request, *args, **kwargs):
        request.pending_client_may_authenticate = True
        return super().client_authentication_required(request, *args, **kwargs)

    @staticmethod
    def _pending_client_owner_only(client, user, request) -> None:
        """A pending client redeems its owner's own codes and refresh tokens only (the owner tests
        it before review): the other half of `pending_client_may_authenticate` (oauthclients.policy's
        GRANT door after its CLIENT_AUTHENTICATION door). A rejected client never authenticated."""
        if client is not None and not client_may_act(client, user, Door.GRANT):
            raise errors.UnauthorizedClientError(description=PENDING_CLIENT_OWNER_ONLY, request=request)

    def _extract_basic_auth(self, request):
        # RFC 7617 §2 / RFC 9110 §11.1: the scheme name is case-insensitive (DOT wants "Basic").
        auth = request.headers.get("HTTP_AUTHORIZATION", None)
        scheme, _, credentials = (auth or "").strip().partition(" ")
        if scheme.lower() != "basic" or not credentials.strip():
            return None
        return credentials.strip()

    def _check_secret(self, provided_secret, stored_secret):
        # Not used: secrets are checked against ClientSecret rows in authenticate_client.
        return False

    def authenticate_client(self, request, *args, **kwargs):
        """RFC 6749 §2.3.1: HTTP Basic (preferred) or client_id/client_secret in the body.

        One query: the active secret with this digest, joined to its client. Either of a client's
        two active secrets works; a revoked one fails at once. Unknown client and wrong secret
        take the same path and the same time.
        """
        request.pending_client_may_authenticate = True
        auth_string = self._extract_basic_auth(request)
        if auth_string:
            credentials = basic_credentials(auth_string)
            if credentials is None:
                return False
            client_id, provided = credentials
        else:
            client_id = getattr(request, "client_id", None)
            provided = getattr(request, "client_secret", None)
        if not isinstance(client_id, str) or not client_id or len(client_id) > 255:
            return False
        if auth_string and provided == "":
            # A public client identifying itself through Basic with an empty password (what
            # requests-oauthlib sends by default): the same as client_id alone ("none").
            return self._public_client_identified(client_id, request)
        if not isinstance(provided, str) or not provided or len(provided) > 512:
            return False
        secret = _SECRET_QUERY.first(digest(provided), client_id)
        if secret is None or not secret.matches(provided):
            return False
        client = secret.client
        if client.client_type == ClientKind.PUBLIC or not client_may_act(client, None, Door.CLIENT_AUTHENTICATION):
            return False
        call = client_call.get()
        if client.is_resource_server and not (call and call.resource_servers_allowed):
            # Its credentials are right, but it may only introspect (RFC 6749 §5.2: unauthorized_client).
            raise errors.UnauthorizedClientError(
                description="A resource server can only introspect tokens; it has no grants and cannot revoke.",
                request=request,
            )
        if call is not None:
            call.client = client
        request.client = client
        request.client_id = client_id
        now = timezone.now()
        # Last use is shown to the developer to help rotation; minute precision is plenty and
        # saves a write on almost every token request.
        if secret.last_used_at is None or (now - secret.last_used_at).total_seconds() > 60:
            ClientSecret.objects.filter(pk=secret.pk).update(last_used_at=now)
        return True

    def _public_client_identified(self, client_id: str, request) -> bool:
        client = self._load_application(client_id, request)
        if client is None or client.client_type != ClientKind.PUBLIC:
            return False
        request.client_id = client_id
        return True

    def authenticate_client_id(self, client_id, request, *args, **kwargs):
        # Identification by client_id alone is for public clients only. DOT lets any kind that is
        # not "confidential" through, which would let a resource server introspect without its secret.
        request.pending_client_may_authenticate = True
        return self._public_client_identified(client_id, request) if isinstance(client_id, str) else False

    def _load_application(self, client_id, request):
        if not isinstance(client_id, str) or not client_id or len(client_id) > 255 or "\x00" in client_id:
            return None
        return super()._load_application(client_id, request)

    def is_pkce_required(self, client_id, request):
        # RFC 7636 / spec §5.4: public clients must use PKCE; confidential clients may.
        client = request.client or self._load_application(client_id, request)
        return client is not None and client.client_type == ClientKind.PUBLIC

    # --- authorization codes: stored as digests, single use ---------------------------------

    def save_authorization_code(self, client_id, code, request, *args, **kwargs):
        # oauthlib drew the code from SystemRandom (~178 bits); replace it with 256 bits from
        # `secrets` (SECURITY.md). The same dict goes into the redirect, so the client gets this one.
        code["code"] = secrets.token_urlsafe(32)
        self._create_authorization_code(request, code)

    def _create_authorization_code(self, request, code, expires=None):
        if not expires:
            expires = timezone.now() + timedelta(seconds=oauth2_settings.AUTHORIZATION_CODE_EXPIRE_SECONDS)
        grant = Grant(
            # When the user last logged in (the session's): a JWT access token's and an ID token's
            # auth_time, carried on by the refresh tokens of this grant.
            auth_time=getattr(request, "auth_time", None),
            application=request.client,
            user=request.user,
            code=digest(code["code"]),
            expires=expires,
            redirect_uri=request.redirect_uri,
            scope=" ".join(request.scopes or []),
            code_challenge=request.code_challenge or "",
            code_challenge_method=request.code_challenge_method or "",
            resource=_resource_list(request),
        )
        if "openid" in (request.scopes or ()):
            # OpenID Connect: what the ID token will say, as the authorization request found it
            # (oauthflows.pages.authorization: nonce checked there; sid from the session).
            grant.nonce = request.nonce or ""
            grant.sid = getattr(request, "sid", None) or ""
            grant.amr = getattr(request, "amr", None) or ""
        if getattr(request, "record_consent", False):
            # The Allow POST on PostgreSQL: the code, the consent and its audit row in one statement.
            consent_record(code=grant, user=request.user, client=request.client, scopes=list(request.scopes or []))
        else:
            grant.save(force_insert=True)
        return grant

    def _grant(self, code, request) -> Grant | None:
        """The grant for this code and client, locked for the rest of the request's transaction."""
        state = _code_state(request)
        if state.grant is not None:
            return state.grant
        if not isinstance(code, str) or not code or len(code) > 512:
            return None
        grant = self._grant_claimed(code, request)
        if grant is None:
            grant = (
                Grant.objects.select_for_update()
                .filter(code=digest(code), application=request.client)
                .select_related("user")
                .first()
            )
        state.grant = grant
        return grant

    @staticmethod
    def _grant_claimed(code: str, request) -> Grant | None:
        """The fast path: the code redeemed in one statement if every check passes, else None."""
        client, verifier = request.client, getattr(request, "code_verifier", None)
        if (
            client is None
            or not client_claims_without_owner_check(client)  # a pending client's owner check: the full path
            or not isinstance(request.redirect_uri, str)
            or (verifier is not None and not CODE_VERIFIER_RE.fullmatch(verifier))
        ):
            return None
        claimed = grant_claim(
            code=code, client_pk=client.pk, redirect_uri=request.redirect_uri, verifier=verifier, now=timezone.now()
        )
        if claimed is None:
            return None
        grant, family = claimed
        Grant._meta.get_field("application").set_cached_value(grant, client)
        grant.claimed = True
        _code_state(request).family = family
        _mark_claimed()
        return grant

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        grant = self._grant(code, request)
        if grant is None:
            return False
        if grant.used_at is not None and not getattr(grant, "claimed", False):
            # RFC 6749 §4.1.2 / RFC 9700 §4.5: strictly single use. Any second presentation, however
            # soon (even one that raced the first), revokes what the code produced. The replay
            # grace (_is_concurrent_duplicate) is for refresh tokens only.
            if grant.token_family:
                RefreshToken.revoke_family(grant.token_family)
                audit_record(
                    client=grant.application,
                    actor=None,
                    user=grant.user,
                    action=AuditAction.FAMILY_REVOKED,
                    reason="authorization code replayed",
                )
                grant.token_family = None
                grant.save(update_fields=["token_family", "updated"])
            raise errors.InvalidGrantError(description="The authorization code has already been used.", request=request)
        if not getattr(grant, "claimed", False):  # the claim's statement checked the same (its SQL twin)
            Grant._meta.get_field("application").set_cached_value(grant, request.client)  # filtered by it
            ended = token_ended(grant)
            if ended is Ended.EXPIRED:
                raise errors.InvalidGrantError(description="The authorization code has expired.", request=request)
            if ended is not None:
                # Deactivation ends the user's codes (services.user_access_end); this covers a code
                # issued in the moment before it, and a user deactivated by a bulk update that sent
                # no signal.
                raise errors.InvalidGrantError(
                    description="The authorization code is no longer valid.", request=request
                )
        self._pending_client_owner_only(request.client, grant.user, request)
        verifier = getattr(request, "code_verifier", None)
        if verifier is not None and not CODE_VERIFIER_RE.fullmatch(verifier):
            raise errors.InvalidRequestError(
                description="code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636).",
                request=request,
            )
        if verifier is not None and not grant.code_challenge:
            # RFC 9700 §2.1.1: a verifier for a code issued without a challenge is a downgrade.
            raise errors.InvalidGrantError(
                description="code_verifier was sent but the authorization request had no code_challenge.",
                request=request,
            )
        request.scopes = grant.scope.split()
        _within_ceiling(request.client, request.scopes, request)
        request.user = grant.user
        _audience_set(request, list(grant.resource or []))
        return True

    def get_code_challenge(self, code, request):
        grant = self._grant(code, request)
        return (grant.code_challenge or None) if grant else None

    def get_code_challenge_method(self, code, request):
        grant = self._grant(code, request)
        return (grant.code_challenge_method or None) if grant else None

    def confirm_redirect_uri(self, client_id, code, redirect_uri, client, *args, **kwargs):
        request = args[0] if args else kwargs.get("request")
        grant = self._grant(code, request)
        # RFC 6749 §4.1.3 and §5.2: a redirect_uri that differs from the authorization request's
        # is invalid_grant (oauthlib would answer invalid_request).
        if grant is None or redirect_uri != grant.redirect_uri:
            raise errors.InvalidGrantError(
                description="redirect_uri does not match the one used in the authorization request.",
                request=request,
            )
        return True

    def get_authorization_code_scopes(self, client_id, code, redirect_uri, request):
        # Not called on the token path (Server sends every exchange to the OpenID grant); kept
        # right for oauthlib's dispatcher all the same: the grant already loaded, else one read.
        grant = _code_grant(request)
        if grant is None:
            if not isinstance(code, str) or not code or len(code) > 512:
                return []
            grant = Grant.objects.filter(code=digest(code)).only("scope").first()
        return grant.scope.split() if grant else []

    def get_authorization_code_nonce(self, client_id, code, redirect_uri, request):
        # OpenID Connect Core §3.1.3.6: the nonce of the authorization request, from the grant that
        # validate_code loaded or claimed (no second read).
        grant = _code_grant(request)
        return (grant.nonce or None) if grant is not None else None

    def invalidate_authorization_code(self, client_id, code, request, *args, **kwargs):
        grant = self._grant(code, request)
        if grant is not None and getattr(grant, "claimed", False):
            return  # redeemed by the claim, with its token family
        if grant is None or grant.used_at is not None:
            raise errors.InvalidGrantError(request=request)
        # Kept (not deleted) until it expires, so that a replay can be recognised.
        grant.used_at = timezone.now()
        grant.token_family = _code_state(request).family
        grant.save(update_fields=["used_at", "token_family", "updated"])

    def _check_and_set_request_resource(self, request):
        # Not used: validate_code and validate_refresh_token set the audience (_audience_set), where
        # a refusal is still an error answer; DOT's version looks codes up by their plain value.
        raise NotImplementedError

    # --- OpenID Connect: ID tokens (docs/openid-connect.md) -----------------------------------

    def refresh_id_token(self, request):
        # OpenID Connect Core §12.2 lets a refresh answer carry a new ID token; here it never does
        # (the refresh stays the benchmarked four statements): the ID token is the login's, once.
        return False

    def get_id_token_dictionary(self, token, token_handler, request):
        """The claims DOT and oauthlib do not add (they add aud, iat, nonce, at_hash): iss, sub,
        exp, auth_time (the login the grant recorded), sid and jti. Identity claims are userinfo's."""
        grant = _code_grant(request)
        now = timezone.now()
        expires = now + timedelta(seconds=oauth2_settings.ID_TOKEN_EXPIRE_SECONDS)
        auth_time = getattr(grant, "auth_time", None) or request.user.last_login or now
        claims = {
            "iss": settings.OAUTH_ISSUER,
            "sub": str(request.user.pk),  # the same value as introspection's `sub`
            "exp": int(expires.timestamp()),
            "auth_time": int(auth_time.timestamp()),
            "jti": str(uuid.uuid4()),
        }
        if getattr(grant, "sid", ""):
            claims["sid"] = grant.sid
        if getattr(grant, "amr", ""):
            # RFC 8176 methods of the login, and our level for them (docs/accounts.md, "acr").
            claims["amr"] = grant.amr.split()
            claims["acr"] = acr_for(claims["amr"])
        return claims, expires

    def finalize_id_token(self, id_token, token, token_handler, request):
        """Sign with the current key of the client's algorithm (RS256 by default, ES256 allowed),
        its `kid` in the header; DOT's version reads OIDC_RSA_PRIVATE_KEY instead."""
        claims, expires = self.get_id_token_dictionary(token, token_handler, request)
        id_token.update(claims)
        client = request.client
        algorithm = client.id_token_signed_response_alg
        key = signing_key_current(algorithm)
        if key is None:
            # Refused before anything is issued (the endpoint rolls a claimed code back): a clear
            # answer rather than an unsigned or a 500 (`manage.py check --deploy` warns ahead).
            raise errors.InvalidRequestError(
                description=f"ID tokens cannot be signed now: this server has no {algorithm} signing key.",
                request=request,
            )
        signed = jwt.JWT(header={"typ": "JWT", "alg": algorithm, "kid": key.kid}, claims=id_token)
        signed.make_signed_token(private_key(key))
        request.id_token = IDToken.objects.create(
            user=request.user,
            scope=" ".join(request.scopes or []),
            expires=expires,
            jti=claims["jti"],
            application=client,
        )
        return signed.serialize()

    def _get_key_for_token(self, token):
        """The published keys (the JWKS), for an ID token this server signed: RP-initiated
        logout's id_token_hint. None for anything that is not a compact JWS naming one of them."""
        try:
            header = jws.JWS()
            header.deserialize(token)
            kid = header.jose_header.get("kid")
        except Exception:  # jwcrypto raises several types for garbage; all mean "not ours"
            return None
        keys = [key for key in jwks_document()["keys"] if key.get("kid") == kid]
        if not keys:
            return None
        return jwk.JWKSet.from_json(json.dumps({"keys": keys}))

    # --- tokens -------------------------------------------------------------------------------

    def save_bearer_token(self, token, request, *args, **kwargs):
        """Store the new pair (tokens.services.access_token_issue, in the grant's family); on
        refresh, retire the presented token and its access token.

        Replaces DOT's version, which re-locks and re-reads rows that validate_refresh_token has
        already locked in this transaction (about twice the queries for the same outcome).
        """
        now = timezone.now()
        expires = now + timedelta(seconds=token.get("expires_in", oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS))
        refresh = grant_state(request, RefreshState)
        previous = refresh.presented if refresh is not None else None
        code = grant_state(request, CodeState)
        with transaction.atomic(savepoint=False):
            if previous is not None:
                # RFC 6749 §6 / RFC 9700 §4.14.2: rotation. The old refresh token is dead from
                # now on (a later replay revokes the family); its access token goes with it.
                # A claimed token (tokens.redemption) was retired by its claim already.
                if not getattr(previous, "claimed", False):
                    RefreshToken.objects.filter(pk=previous.pk).update(revoked=now, access_token=None, updated=now)
                    if previous.access_token_id:
                        # A JWT's status bit is set by the database as the row goes (signing.statuslist).
                        AccessToken.objects.filter(pk=previous.access_token_id)._raw_delete(AccessToken.objects.db)
                family = previous.token_family or uuid.uuid4()
            else:
                family = (code.family if code is not None else None) or uuid.uuid4()
            access = access_token_issue(
                value=token["access_token"],
                user=request.user,
                client=request.client,
                scope=token.get("scope", ""),
                expires=expires,
                resource=_resource_list(request),
                lineage=Lineage(family=family),
                jwt_status=_state(request).jwt_status,
                source_refresh_token=previous,
                refresh_value=token["refresh_token"],
                auth_time=_authenticated_at(request),
            )
        issued_tell(access)
        if code is not None:
            code.family = family  # for invalidate_authorization_code, which oauthlib calls next

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        if not isinstance(refresh_token, str) or not refresh_token or len(refresh_token) > 512:
            return False
        lifetime = timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)
        if client_claims_without_owner_check(client):
            # The fast path: checked, revoked and its access token deleted in one statement.
            now = timezone.now()
            claimed = refresh_token_claim(raw=refresh_token, client_pk=client.pk, now=now, alive_after=now - lifetime)
            if claimed is not None:
                claimed.claimed = True
                _mark_claimed()
                request.user = claimed.user
                request.refresh_token = refresh_token
                request.grant_state = RefreshState(presented=claimed)
                _audience_set(request, list(claimed.resource or []))
                return True
        # The full path. Lock the row for the rest of the request: a concurrent refresh of the same
        # token waits here, then sees it rotated and loses (exactly one winner).
        rt = (
            RefreshToken.objects.select_for_update(of=("self",))
            .filter(token_checksum=digest(refresh_token))
            .select_related("access_token", "user")
            .order_by(F("revoked").desc(nulls_first=True))
            .first()
        )
        if rt is None:
            return False
        if rt.revoked is not None:
            if _is_concurrent_duplicate(rt.revoked):
                return False
            # RFC 9700 §4.14.2: replay of a rotated refresh token revokes the whole family,
            # but only if it belongs to the presenting client (a foreign token is just invalid).
            if rt.application_id == getattr(client, "pk", None) and rt.token_family:
                if RefreshToken.objects.filter(token_family=rt.token_family, revoked__isnull=True).exists():
                    audit_record(
                        client=client,
                        actor=None,
                        user=rt.user,
                        action=AuditAction.FAMILY_REVOKED,
                        reason="rotated refresh token replayed",
                    )
                RefreshToken.revoke_family(rt.token_family)
            return False
        if rt.application_id != getattr(client, "pk", None):
            return False
        # A live token always has its access token (rotation mints the pair together); an orphan
        # left by an out-of-band deletion has nothing to refresh. Expiry slides with the pair
        # (tokens.liveness).
        RefreshToken._meta.get_field("application").set_cached_value(rt, client)
        if not token_alive(rt):
            return False
        self._pending_client_owner_only(client, rt.user, request)
        _within_ceiling(client, rt.access_token.scope.split(), request)
        request.user = rt.user
        request.refresh_token = refresh_token
        request.grant_state = RefreshState(presented=rt)
        _audience_set(request, list(rt.resource or []))
        return True

    def get_original_scopes(self, refresh_token, request, *args, **kwargs):
        # DOT's reads `request.refresh_token_instance`; here the presented token is the refresh
        # grant's state, and always has its access token (validate_refresh_token made sure).
        return grant_state(request, RefreshState).presented.access_token.scope

    # --- revocation (RFC 7009) and introspection (RFC 7662) ------------------------------------

    def _own_token(self, token, token_type_hint, request):
        """The presenting client's access or refresh token with this value, or None.

        Scoped to request.client, so another client's token is treated as unknown (RFC 7009 §2.1).
        """
        client_pk = getattr(request.client, "pk", None)
        if client_pk is None or not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
            return None
        checksum = digest(token)
        models = (RefreshToken, AccessToken) if token_type_hint == "refresh_token" else (AccessToken, RefreshToken)
        for model in models:
            found = (
                model.objects.filter(token_checksum=checksum, application_id=client_pk)
                .select_related("user", "application")
                .first()
            )
            if found is not None:
                return found
        return None

    def revoke_token(self, token, token_type_hint, request, *args, **kwargs):
        found = self._own_token(token, token_type_hint, request)
        if isinstance(found, AccessToken):
            # The tokens exchanged from it (RFC 8693, its lineage: tokens.services) end with it.
            with transaction.atomic():
                AccessToken.objects.exchanged_from_token(found.pk).delete()  # status bits set too
                revoke_access_token(found)  # and its refresh token, so it cannot mint a new one
        elif isinstance(found, RefreshToken):
            # A refresh token stands for the whole authorization: its family goes, access tokens
            # too, and what was exchanged from them (AccessTokenQuerySet.descending_from_family).
            if found.token_family:
                RefreshToken.revoke_family(found.token_family)
            else:
                with transaction.atomic():
                    if found.access_token_id:
                        AccessToken.objects.exchanged_from_token(found.access_token_id).delete()
                    found.revoke()

    def introspect_token(self, token, token_type_hint, request, *args, **kwargs):
        client = request.client
        if client is not None and client.is_resource_server:
            return access_token_claims_for_resource_server(token, resource_server=client)
        if client is None or client.client_type != ClientKind.CONFIDENTIAL:
            return None  # only an authenticated client learns anything (public clients cannot)
        found = self._own_token(token, token_type_hint, request)
        if isinstance(found, AccessToken):
            live = access_token_get_valid(token)
            if live is None or live.pk != found.pk:
                return None
            return self._claims(found, "access_token", found.scope, found.expires)
        if isinstance(found, RefreshToken) and found.access_token_id:  # revoked: none left (tokens.liveness)
            access = AccessToken.objects.filter(pk=found.access_token_id).only("scope", "expires").first()
            if access is None:
                return None
            RefreshToken._meta.get_field("access_token").set_cached_value(found, access)
            if not token_alive(found):
                return None
            expires = access.expires + timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)
            return self._claims(found, "refresh_token", access.scope, expires)
        return None

    @staticmethod
    def _claims(token, token_type: str, scope: str, expires) -> dict:
        return introspection_claims(token, token_type=token_type, scope=scope, expires=expires)

    def validate_bearer_token(self, token, scopes, request):
        # The resource side uses scopes.authentication instead (one query, our own errors).
        access_token = access_token_get_valid(token)
        if access_token is None:
            return False
        request.client = access_token.application
        request.user = access_token.user
        request.scopes = access_token.scope.split()
        request.access_token = access_token
        return True


def access_token_claims_for_resource_server(raw_token, *, resource_server) -> dict | None:
    """RFC 7662 §2.2 claims of a live access token, for a resource server; None: `active: false`.

    Any client's token, never a refresh token (no credential at a resource server). One indexed
    lookup joined to the client (a rejected client's tokens are dead) and the user. A token bound
    to audiences (RFC 8707) that do not include this resource server is inactive to it (RFC 7662
    §2.2 lets the server answer so): no service can be talked into accepting another's token,
    whatever its own audience check says. A token bound to no audience is described to every one.
    """
    token = access_token_get_for_introspection(raw_token)
    if token is None:
        return None
    if token.resource and not audience_includes(token.resource, resource_server.resource_uri):
        return None
    return introspection_claims(token, token_type="access_token", scope=token.scope, expires=token.expires)


# RFC 7662 §2.2 `token_type`: an access token is a Bearer token (RFC 6750); a refresh token is no
# token type of RFC 6749 §7.1 and is named as such, so that no verifier can take it for a bearer.
INTROSPECTION_TOKEN_TYPES = {"access_token": "Bearer", "refresh_token": "refresh_token"}


def introspection_claims(token, *, token_type: str, scope: str, expires) -> dict:
    """The one shape of an active introspection answer, whoever asks (docs/verifying-tokens.md)."""
    claims = {
        "active": True,
        "scope": scope,  # as granted: ORG_ grants are not expanded
        "client_id": token.application.client_id,
        "username": token.user.get_username(),
        "sub": str(token.user_id),  # the user's primary key: never reassigned
        "exp": int(expires.timestamp()),
        "iat": int(token.created.timestamp()),
        "iss": settings.OAUTH_ISSUER,
        "token_type": INTROSPECTION_TOKEN_TYPES[token_type],
        # A legacy client's token has no scope and no scope restriction (spec §2.1).
        "unrestricted": scope == "",
    } | ({"aud": list(token.resource)} if token.resource else {})
    # RFC 8693 §4.1: a token obtained by exchange names the resource server that exchanged it.
    return claims | ({"act": token.act} if getattr(token, "act", None) else {})


class Server(OpenIDServer):
    """oauthlib's OpenID Connect server, with every code exchange sent to its OpenID grant.

    oauthlib's dispatcher reads the code's scopes before the exchange is validated, to choose
    between the OAuth 2.0 and the OpenID grant: a query of its own on every exchange. The OpenID
    grant is the OAuth 2.0 grant plus an ID token when `openid` was granted, so it serves both,
    and the grant loaded (or claimed) by validate_code answers the nonce.
    """

    def __init__(self, request_validator, *args, **kwargs):
        super().__init__(request_validator, *args, **kwargs)
        # Exactly the declared grants (oauthflows.grants), each to the grant object it names: ours
        # (the exchange, ID-JAG), or oauthlib's own (the OpenID grant for codes, the refresh grant).
        # oauthlib's others (password, client_credentials, device code) are not dispatched to at all.
        self._grant_types = {grant.grant_type: self._handler(grant.handler, request_validator) for grant in GRANTS}
        # The code for an authorization request the pages validated (Backend, below).
        self.validated_code_grant = ValidatedCodeGrant(request_validator)

    def _handler(self, handler: str, request_validator):
        return import_string(handler)(request_validator) if "." in handler else getattr(self, handler)


class ValidatedCodeGrant(AuthorizationCodeGrant):
    """oauthlib's code grant, for a request the authorization pages have validated in full.

    oauthflows.pages.authorization checks everything oauthlib's validation does (one value per
    parameter, the client, the exact redirect URI, response_type, PKCE with S256, the scopes) and
    more, moments before, in the same request; parsing and validating it all again cost the Allow
    POST a tenth of a millisecond and more (docs/performance.md, "The authorize page"). What is
    asked again is whether the client may still act (a race with its rejection or deletion: it
    reads the client already loaded, no statement). The code, its save (Validator above) and the
    redirect are oauthlib's own. An OpenID Connect code is issued the same way: oauthlib's OpenID
    grant adds nothing to a `code` response but validation, and its ID token comes at the exchange.
    """

    def validate_authorization_request(self, request):
        if not self.request_validator.validate_client_id(request.client_id, request):
            raise errors.InvalidClientIdError(request=request)
        return request.scopes, {}

    def create_authorization_code(self, request):
        # oauthlib's draws 30 characters with a system call each (common.generate_token, ~30 µs);
        # the code is drawn from `secrets`, as the validator's save_authorization_code draws it.
        grant = {"code": secrets.token_urlsafe(32)}
        if request.state:
            grant["state"] = request.state
        return grant


class Backend(OAuthLibCore):
    """Reads token-endpoint bodies as form or JSON; issues the code for a validated authorization."""

    def create_validated_authorization_response(self, request, query, scopes, credentials) -> str:
        """The redirect with a new code, for an authorization request the pages validated.

        `query` is the request in the form they normalised it to (comma-separated scopes, S256 as the
        default method, response_type defaulting to code: AuthorizationRequest.oauthlib_query);
        oauthlib's Request is made from it alone (the browser's headers and form are not the
        grant's business). Otherwise as DOT's create_authorization_response: the user joins the
        credentials, RFC 9207's `iss` joins the redirect, and oauthlib's errors come out as DOT's.
        """
        credentials["user"] = request.user
        # The parameters as oauthlib's Request keeps a query's (the last of a repeated name), without
        # writing the query out for oauthlib to parse it back.
        oauthlib_request = Request(request.path)
        oauthlib_request._params.update(query)
        oauthlib_request.scopes = scopes
        for name, value in credentials.items():
            setattr(oauthlib_request, name, value)
        try:
            headers, _body, _status = self.server.validated_code_grant.create_authorization_response(
                oauthlib_request, self.server.default_token_type
            )
        except errors.FatalClientError as error:
            raise FatalClientError(error=error, redirect_uri=credentials["redirect_uri"]) from error
        except errors.OAuth2Error as error:
            raise OAuthToolkitError(error=error, redirect_uri=credentials["redirect_uri"]) from error
        uri = headers["Location"]
        if oauth2_settings.COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS:
            uri = _add_iss_to_redirect(uri, oauth2_settings.oauth2_authorization_server_issuer(request))
        return uri

    def extract_body(self, request):
        if request.content_type == "application/json":
            return request_json_pairs(request)
        return super().extract_body(request)
