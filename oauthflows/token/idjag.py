"""Enterprise-managed authorization: the Identity Assertion JWT Authorization Grant (ID-JAG).

An organization's identity provider (accounts.IdentityProvider, the one its people sign in
through) signs an assertion that one of its people may use one of our clients toward one of our
resource servers; the client trades it here with RFC 7523's JWT bearer grant
(`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`, `assertion=<ID-JAG>`). No consent page
is shown: the organization decided, and an administrator here said which clients its assertions
may reach and up to which scopes (accounts.AssertionPolicy, `manage.py identityprovider
allow-assertions`). MCP's Enterprise-Managed Authorization extension; the MCP Python SDK's
`IdentityAssertionOAuthProvider` is the client side.

Every claim is checked, each refusal its RFC 6749 §5.2 error:

- the client authenticates with its secret (`invalid_client`), and the provider allows it
  (`unauthorized_client` otherwise);
- header: `typ` `oauth-id-jag+jwt`, an asymmetric `alg`, a `kid` found in the issuer's JWKS,
  fetched from the issuer's OpenID discovery like client metadata documents (https and public
  addresses; loopback with OAUTH_CLIENT_METADATA_ALLOW_LOOPBACK, for development and tests),
  kept for JWKS_CACHE_SECONDS and fetched again for an unknown `kid` at most every
  JWKS_REFETCH_SECONDS (a fetch that fails keeps the last good keys for up to JWKS_KEPT_SECONDS;
  a key not among them is refused as such, the reason logged, and the fetch tried again after
  JWKS_REFETCH_SECONDS); the signature (`invalid_grant` for any of these);
- claims: `iss` a provider of ours, `aud` our issuer, `client_id` the authenticated client,
  `resource` an approved resource server of ours (and the request's `resource`, if sent),
  `exp` in the future and at most MAX_LIFETIME_SECONDS away, `iat` neither in the future nor
  more than MAX_LIFETIME_SECONDS in the past (CLOCK_SKEW_SECONDS allowed each way), `jti` never
  seen before (accounts.AssertionUse) (`invalid_grant`);
- `scope` (the request's, else the assertion's) within the assertion's, the policy's, the
  client's and, for an unverified client, the ceiling (`invalid_scope`);
- the person: the account linked to (provider, `sub`) by single sign-on, or the one whose
  verified address is the assertion's `email` when the assertion vouches for it
  (`email_verified: true`) in a domain the provider speaks for (accounts.identity, the same rule
  as the sign-in's; `invalid_grant` otherwise, and for an inactive account).

The access token is bound to the resource, comes with no refresh token (a new assertion is the
way to continue, so that the organization stays in charge), records the issuer
(AccessToken.assertion_issuer), is audited, listed in Connected apps as allowed by the
organization and revocable there, and ended by `identityprovider deny-assertions`.
"""

import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from jwcrypto import jwk, jws
from jwcrypto.common import JWException
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749 import errors

from accounts.audit import account_audit_record
from accounts.identity import upstream_person
from accounts.models import AccountAuditAction, AssertionPolicy, AssertionUse, IdentityProvider
from oauthclients.models import ClientKind, OAuthClient, digest
from oauthclients.policy import Door, client_may_act, client_serves_q
from oauthclients.tier import ceiling_refusal
from oauthflows.grants import AssertionState
from oauthflows.registration.cimd import MetadataFetcher
from oauthflows.token.single import SingleTokenGrant
from tokens.services import Lineage

ID_JAG_TYPE = "oauth-id-jag+jwt"
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
MAX_LIFETIME_SECONDS = 300  # an assertion is for now, not for later
CLOCK_SKEW_SECONDS = 5  # how far the provider's clock may be from ours, for `iat` either way
MAX_ASSERTION_LENGTH = 16 * 1024
JWKS_CACHE_SECONDS = 3600
JWKS_REFETCH_SECONDS = 5  # an unknown kid fetches the JWKS again, at most this often per issuer
JWKS_KEPT_SECONDS = 24 * 3600  # the last good keys still verify this long while fetches fail

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Held:
    """An issuer's keys as this process holds them (_key)."""

    keys: dict[str, jwk.JWK]  # by kid, from the last fetch that succeeded
    fetched_at: float | None  # when that fetch was (time.monotonic), None if none ever did
    tried_at: float  # when the last fetch was tried
    failed: bool  # whether that one failed


_jwks: dict[str, _Held] = {}
_jwks_lock = threading.Lock()


class InvalidTarget(errors.OAuth2Error):
    error = "invalid_target"  # RFC 8707 §2
    status_code = 400


class AssertionRefused(Exception):
    def __init__(self, error: type[errors.OAuth2Error], description: str):
        super().__init__(description)
        self.error, self.description = error, description


def _refuse(description: str, error=errors.InvalidGrantError):
    raise AssertionRefused(error, description)


class KeysUnavailable(Exception):
    """The issuer's discovery document or JWKS could not be fetched or read (the reason is logged)."""


def jwks_forget() -> None:
    """Drop every cached JWKS (tests). The cache is each process's own: after a provider's emergency
    key rotation, restarting the server drops it everywhere (docs/agents.md)."""
    with _jwks_lock:
        _jwks.clear()


def _fetch_keys(issuer: str) -> dict[str, jwk.JWK]:
    fetcher = MetadataFetcher()
    discovery, _expires = fetcher.fetch(issuer + "/.well-known/openid-configuration")
    if discovery.get("issuer", "").rstrip("/") != issuer or not isinstance(discovery.get("jwks_uri"), str):
        raise ValueError("the discovery document names another issuer or no jwks_uri")
    document, _expires = fetcher.fetch(discovery["jwks_uri"])
    keys = {}
    for entry in document.get("keys") or []:
        if isinstance(entry, dict) and isinstance(entry.get("kid"), str) and "d" not in entry:
            try:
                keys[entry["kid"]] = jwk.JWK(**entry)
            except (JWException, ValueError, TypeError):
                continue  # one unusable key does not spoil the others
    return keys


def _key(issuer: str, kid: str) -> jwk.JWK | None:
    """The issuer's key `kid`, from the cached JWKS or, when unknown or stale, a fresh fetch.

    A fetch that fails keeps the last good keys: a key of theirs we hold still verifies for up to
    JWKS_KEPT_SECONDS after they were fetched, through a passing outage of the provider's
    discovery or JWKS; a key the provider withdrew goes at the next fetch that succeeds. Raises
    KeysUnavailable when that fetch (or one a moment ago) failed and no kept key is `kid`."""
    now = time.monotonic()
    with _jwks_lock:
        held = _jwks.get(issuer)
    fresh = held is not None and held.fetched_at is not None and now - held.fetched_at < JWKS_CACHE_SECONDS
    if fresh and kid in held.keys:
        return held.keys[kid]
    if held is None or now - held.tried_at >= JWKS_REFETCH_SECONDS:
        try:
            held = _Held(keys=_fetch_keys(issuer), fetched_at=now, tried_at=now, failed=False)
        except Exception as exc:  # any fetch or parse failure: the keys cannot be renewed now
            log.warning("ID-JAG: the keys of %s could not be fetched through its OpenID discovery: %s", issuer, exc)
            kept, fetched_at = (held.keys, held.fetched_at) if held is not None else ({}, None)
            held = _Held(keys=kept, fetched_at=fetched_at, tried_at=now, failed=True)
        with _jwks_lock:
            _jwks[issuer] = held
    # else tried a moment ago: an unknown kid does not make us fetch again
    if held.failed:
        kept = held.fetched_at is not None and now - held.fetched_at < JWKS_KEPT_SECONDS
        if kept and kid in held.keys:
            return held.keys[kid]
        raise KeysUnavailable(issuer)
    return held.keys.get(kid)


def _verified_claims(assertion: str) -> tuple[IdentityProvider, dict]:
    token = jws.JWS()
    try:
        token.deserialize(assertion)
        header = token.jose_header
        unverified = json.loads(token.objects["payload"])
    except (JWException, ValueError, TypeError, KeyError):
        _refuse("The assertion is not a signed JWT.")
    if not isinstance(header, dict) or str(header.get("typ", "")).lower() != ID_JAG_TYPE:
        _refuse(f"The assertion's typ must be {ID_JAG_TYPE}.")
    if header.get("alg") not in ALGORITHMS or not isinstance(header.get("kid"), str):
        _refuse("The assertion must be signed with an asymmetric algorithm and name its key (kid).")
    issuer = unverified.get("iss") if isinstance(unverified, dict) else None
    provider = IdentityProvider.objects.filter(issuer=str(issuer).rstrip("/")).first() if issuer else None
    if provider is None:
        _refuse("The assertion's issuer is not an identity provider of this service.")
    try:
        key = _key(provider.issuer, header["kid"])
    except KeysUnavailable:
        _refuse("The keys of the assertion's issuer could not be fetched (its OpenID discovery and JWKS).")
    if key is None:
        _refuse("The assertion's key is not in its issuer's JWKS.")
    try:
        token.verify(key, alg=header["alg"])
    except JWException:
        _refuse("The assertion's signature does not verify.")
    return provider, json.loads(token.payload)


def _number(claims: dict, name: str) -> int:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        _refuse(f"The assertion's {name} must be a number.")
    return int(value)


def _check_claims(claims: dict, *, client: OAuthClient, requested_resource: str | None) -> str:
    """Every time, audience and identity claim; the resource the token is for."""
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if settings.OAUTH_ISSUER not in audiences:
        _refuse("The assertion's aud is not this authorization server's issuer.")
    if claims.get("client_id") != client.client_id:
        _refuse("The assertion was issued for another client.")
    now = time.time()
    expires, issued = _number(claims, "exp"), _number(claims, "iat")
    if expires <= now:
        _refuse("The assertion has expired.")
    if expires > now + MAX_LIFETIME_SECONDS:
        _refuse(f"The assertion lives too long: at most {MAX_LIFETIME_SECONDS} seconds.")
    if issued > now + CLOCK_SKEW_SECONDS:
        _refuse("The assertion's iat is in the future.")
    if issued < now - MAX_LIFETIME_SECONDS - CLOCK_SKEW_SECONDS:
        # An assertion is for now: issued longer ago than one may live, it is refused whatever its
        # exp says (SECURITY.md: "an iat no older than the lifetime accepted").
        _refuse(f"The assertion was issued too long ago: at most {MAX_LIFETIME_SECONDS} seconds.")
    if not isinstance(claims.get("jti"), str) or not claims["jti"] or len(claims["jti"]) > 255:
        _refuse("The assertion must carry a jti.")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        _refuse("The assertion must name its subject (sub).")
    resource = claims.get("resource")
    if not isinstance(resource, str):
        _refuse("The assertion must name the resource (resource).")
    if not OAuthClient.objects.filter(
        client_serves_q(), client_type=ClientKind.RESOURCE_SERVER, resource_uri=resource
    ).exists():
        _refuse("The assertion's resource is not a resource server of this service.", InvalidTarget)
    if requested_resource and requested_resource != resource:
        _refuse("The resource requested is not the one the assertion names.", InvalidTarget)
    return resource


def _scopes(claims: dict, requested: str | None, *, policy: AssertionPolicy, client: OAuthClient) -> list[str]:
    asserted = claims.get("scope")
    asserted = asserted.split() if isinstance(asserted, str) else []
    wanted = list(dict.fromkeys(requested.split())) if requested else asserted
    if not wanted:
        _refuse("The assertion grants no scope.", errors.InvalidScopeError)
    allowed = set(policy.scopes or client.scope_list) & set(client.scope_list) & set(asserted)
    beyond = [name for name in wanted if name not in allowed]
    if beyond:
        _refuse(
            "Beyond what the organization's policy, the client and the assertion allow: " + ", ".join(beyond) + ".",
            errors.InvalidScopeError,
        )
    refusal = ceiling_refusal(client, wanted)
    if refusal:
        _refuse(refusal, errors.InvalidScopeError)
    return wanted


def _person(provider: IdentityProvider, claims: dict):
    """The assertion's person, by the one rule for who an upstream identity is
    (accounts.identity.upstream_person): the (provider, sub) link, else a verified address here
    that the assertion vouches for (`email_verified: true`, in the provider's domains); None
    otherwise."""
    return upstream_person(
        provider=provider, sub=claims["sub"], email=claims.get("email"), email_verified=claims.get("email_verified")
    )


def _assertion_use(provider: IdentityProvider, claims: dict) -> None:
    """RFC 7523 §3 (7): a jti is accepted once, while the assertion lives."""
    AssertionUse.objects.filter(expires__lt=timezone.now()).delete()
    try:
        with transaction.atomic():
            AssertionUse.objects.create(
                issuer=provider.issuer,
                jti_digest=digest(claims["jti"]),
                expires=datetime.fromtimestamp(claims["exp"], tz=UTC),
            )
    except IntegrityError:
        _refuse("The assertion was used already (jti).")


class JwtBearerGrant(SingleTokenGrant):
    """grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer with an ID-JAG (RFC 7523 §2.1;
    oauthflows.grants.JWT_BEARER)."""

    state = AssertionState

    def validate_token_request(self, request) -> None:
        assertion = request._params.get("assertion")
        if not isinstance(assertion, str) or not assertion:
            raise errors.InvalidRequestError(description="The assertion parameter is required.", request=request)
        if len(assertion) > MAX_ASSERTION_LENGTH:
            raise errors.InvalidGrantError(description="The assertion is too long.", request=request)
        if not self.request_validator.authenticate_client(request):
            raise errors.InvalidClientError(request=request)
        client = request.client
        requested_resource = request._params.get("resource")
        try:
            provider, claims = _verified_claims(assertion)
            resource = _check_claims(
                claims,
                client=client,
                requested_resource=requested_resource if isinstance(requested_resource, str) else None,
            )
            policy = AssertionPolicy.objects.filter(provider=provider, client=client).first()
            if policy is None:
                _refuse(f"{provider.name} may not grant access to this client.", errors.UnauthorizedClientError)
            requested = request._params.get("scope")
            scopes = _scopes(claims, requested if isinstance(requested, str) else None, policy=policy, client=client)
            user = _person(provider, claims)
            if user is None or not user.is_active:
                _refuse("The assertion's person has no account here (no single sign-on link, no verified address).")
            if not client_may_act(client, user, Door.GRANT):
                # oauthclients.policy: rejected never (it did not authenticate either); pending
                # only for its owner, as for the code grant.
                _refuse(f"{provider.name} may not grant access to this client.", errors.UnauthorizedClientError)
            _assertion_use(provider, claims)
        except AssertionRefused as exc:
            raise exc.error(description=exc.description, request=request) from None
        issued = datetime.fromtimestamp(_number(claims, "iat"), tz=UTC)
        request.user = user
        request.scopes = scopes
        request.resource = [resource]
        request.grant_state = AssertionState(
            provider=provider,
            lifetime=oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS,
            # No family (no refresh token): what ends it is the organization's deny, the user's
            # revocation under Connected apps, and what ends any grant (tokens.services).
            lineage=Lineage(assertion_issuer=provider.issuer),
            auth_time=issued,
        )

    def issued(self, access, request, state: AssertionState) -> None:
        """Audited: granted by the organization's provider (in the token row's transaction)."""
        provider = state.provider
        account_audit_record(
            actor=None,
            user=request.user,
            action=AccountAuditAction.ASSERTION_GRANTED,
            provider=provider.slug,
            granted_by=f"{provider.name}'s identity provider",
            client_id=request.client.client_id,
            scopes=list(request.scopes),
            resource=list(request.resource),
        )
