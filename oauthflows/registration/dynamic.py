"""Dynamic client registration (RFC 7591) on django-oauth-toolkit's view, for agents and tools.

DOT's `DynamicClientRegistrationView` answers 404 unless DCR_ENABLED (settings: off with
OAUTH_DYNAMIC_REGISTRATION=off). Its `post` is ours: it runs the DCR_REGISTRATION_PERMISSION_CLASSES
(OpenRegistration: anyone; the rate limits in plumbing.ratelimit are the gate) and reads the JSON
body as DOT's does, with DOT's public setting rather than its private helpers
(`_registration_permitted`, `_metadata_object`); then the registry's rules for every field (the
developer page's redirect URI rules, the scope catalog, single-line names), secrets kept as digests
(ClientSecret), and the unverified tier (oauthclients.tier): a registration is usable at once, but
only within the ceiling.

RFC 7592 management (`RegistrationConfigurationView`): the registration answer carries a
`registration_access_token` (random, stored as a digest on the client, not as a DOT AccessToken,
which every token path would have to learn to ignore) and a `registration_client_uri`, where the
client reads (GET), replaces (PUT) and deletes (DELETE) its registration with that token as a
bearer. Each update rotates the token; the rules are the registration's; an approved client that
changes what review covers goes back to review (oauthclients.services.registration.client_registration_update).

Not done, on purpose: `software_statement`; fetching `logo_uri` (a server-side request to an
address the registrant chooses: the consent page shows initials instead).
"""

import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.dcr import AllowAllDCRPermission
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views.dynamic_client_registration import DynamicClientRegistrationView

from oauthclients.exceptions import InvalidTransition
from oauthclients.models import ClientKind, IdTokenAlgorithm, OAuthClient
from oauthclients.selectors import client_get_for_registration_token
from oauthclients.services import (
    MAX_NAME_LENGTH,
    client_registration_delete,
    client_registration_update,
    client_self_register,
)
from oauthclients.validators import MAX_REDIRECT_URIS, MAX_URI_LENGTH, has_line_break_or_control, url_host
from oauthflows.grants import AUTHORIZATION_CODE, GRANTS
from plumbing.requestparams import NOT_UNICODE, unicode_scalars_only
from scopes.bearer import MalformedBearer, request_bearer_token
from scopes.catalog import UnknownScopeError, parse_scopes, sort_scopes

AUTH_METHODS = {
    "none": ClientKind.PUBLIC,
    "client_secret_basic": ClientKind.CONFIDENTIAL,
    "client_secret_post": ClientKind.CONFIDENTIAL,
}
# RFC 7591 grant_types: the grants a client registers for (oauthflows.grants, `registrable`).
GRANT_TYPES = tuple(grant.grant_type for grant in GRANTS if grant.registrable)
MAX_CONTACTS = 10
MAX_SHORT_TEXT = 255
MAX_BODY_BYTES = 16 * 1024
# Optional string metadata kept only in OAuthClient.registration_metadata (never shown, never fetched).
STORED_TEXT = ("software_id", "software_version", "logo_uri")


class OpenRegistration(AllowAllDCRPermission):
    """Anyone may register (RFC 7591 §3 open registration): what a registration can do is bounded
    by the unverified tier, and how many there are by the per-address and total rate limits."""


def _registration_permitted(request) -> bool:
    """Every DCR_REGISTRATION_PERMISSION_CLASSES says yes; none configured is no (fails closed,
    as DOT's view does)."""
    classes = oauth2_settings.DCR_REGISTRATION_PERMISSION_CLASSES
    return bool(classes) and all(cls().has_permission(request) for cls in classes)


def _metadata_object(body: bytes):
    """The body's JSON object (RFC 7591 §3.1), or None when it is not valid JSON or not an object."""
    try:
        data = json.loads(body)
    except ValueError:  # json.JSONDecodeError and undecodable bytes alike
        return None
    return data if isinstance(data, dict) else None


class RegistrationError(Exception):
    def __init__(self, error: str, description: str):
        super().__init__(description)
        self.error = error
        self.description = description


def _answer(payload: dict, status: int) -> JsonResponse:
    response = JsonResponse(payload, status=status)
    # RFC 7591 §3.2.1: the answer may carry a secret; nothing on the way may keep it.
    response["Cache-Control"] = "no-store"
    response["Pragma"] = "no-cache"
    return response


def _refusal(error: str, description: str) -> JsonResponse:
    # RFC 6749 §5.2's character set for error_description (which RFC 7591 §3.2.2 reuses).
    shown = "".join(ch if 0x20 <= ord(ch) <= 0x7E and ch not in '"\\' else "?" for ch in description)
    return _answer({"error": error, "error_description": shown}, 400)


def _text(data: dict, key: str, *, max_length: int = MAX_SHORT_TEXT) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RegistrationError("invalid_client_metadata", f"{key} must be a string.")
    if has_line_break_or_control(value):
        raise RegistrationError("invalid_client_metadata", f"{key} must be a single line, without control characters.")
    if len(value) > max_length:
        raise RegistrationError("invalid_client_metadata", f"{key} can be at most {max_length} characters.")
    return value.strip()


def _string_list(data: dict, key: str, *, default: list[str], max_items: int) -> list[str]:
    value = data.get(key, default)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RegistrationError("invalid_client_metadata", f"{key} must be an array of strings.")
    if len(value) > max_items:
        raise RegistrationError("invalid_client_metadata", f"{key} can list at most {max_items} values.")
    return value


def metadata_validate(data: dict) -> dict:
    """RFC 7591 §2 client metadata → the arguments of client_self_register, or RegistrationError.

    Unknown members are ignored, as §2 requires; every known one is checked.
    """
    # A registration body and a metadata document alike: every string, known member or not.
    if not unicode_scalars_only(data):
        raise RegistrationError("invalid_client_metadata", NOT_UNICODE)
    if "redirect_uris" not in data:
        raise RegistrationError("invalid_redirect_uri", "redirect_uris is required: list the app's redirect URIs.")
    redirect_uris = data["redirect_uris"]
    if not isinstance(redirect_uris, list) or not redirect_uris or not all(isinstance(u, str) for u in redirect_uris):
        raise RegistrationError("invalid_redirect_uri", "redirect_uris must be a non-empty array of strings.")
    if len(redirect_uris) > MAX_REDIRECT_URIS:
        raise RegistrationError("invalid_redirect_uri", f"At most {MAX_REDIRECT_URIS} redirect URIs can be registered.")

    code = AUTHORIZATION_CODE.grant_type
    grant_types = _string_list(data, "grant_types", default=[code], max_items=5)
    if unsupported := [g for g in grant_types if g not in GRANT_TYPES]:
        raise RegistrationError(
            "invalid_client_metadata",
            f"Unsupported grant_types: {', '.join(map(repr, unsupported))}. Supported: {', '.join(GRANT_TYPES)}.",
        )
    if code not in grant_types:
        raise RegistrationError("invalid_client_metadata", f"grant_types must include {code}.")
    response_types = _string_list(data, "response_types", default=["code"], max_items=5)
    if set(response_types) != {"code"}:
        raise RegistrationError("invalid_client_metadata", "response_types must be code, the only one supported.")

    method = data.get("token_endpoint_auth_method", "client_secret_basic")
    if not isinstance(method, str) or method not in AUTH_METHODS:
        raise RegistrationError(
            "invalid_client_metadata",
            f"Unsupported token_endpoint_auth_method {str(method)[:100]!r}. Supported: {', '.join(AUTH_METHODS)}.",
        )

    scope = data.get("scope")
    if scope is None:
        scopes = sort_scopes(settings.OAUTH_UNVERIFIED_SCOPES)
    elif not isinstance(scope, str):
        raise RegistrationError("invalid_client_metadata", "scope must be a string of space-separated scope names.")
    else:
        try:
            scopes = parse_scopes(scope)
        except UnknownScopeError as exc:
            raise RegistrationError("invalid_client_metadata", f"scope: {exc}.") from None
        if not scopes:
            raise RegistrationError("invalid_client_metadata", "scope names no scope.")

    # OpenID Connect RP-Initiated Logout §3.1: registered like redirect URIs (the service checks
    # each); an unverified client's logout never redirects to them (oauthclients.redirects).
    post_logout_redirect_uris = _string_list(data, "post_logout_redirect_uris", default=[], max_items=MAX_REDIRECT_URIS)
    contacts = _string_list(data, "contacts", default=[], max_items=MAX_CONTACTS)
    for contact in contacts:
        if len(contact) > 254 or has_line_break_or_control(contact):
            raise RegistrationError(
                "invalid_client_metadata", "contacts: each must be one line of at most 254 characters."
            )

    name = _text(data, "client_name", max_length=MAX_NAME_LENGTH)
    if not name:
        # RFC 7591 makes client_name optional; users need something to read: the redirect host.
        name = f"Unnamed app ({url_host(redirect_uris[0]) or redirect_uris[0].partition(':')[0]})"[:MAX_NAME_LENGTH]
    stored = {
        key: _text(data, key, max_length=MAX_URI_LENGTH if key == "logo_uri" else MAX_SHORT_TEXT) for key in STORED_TEXT
    }
    metadata = {key: value for key, value in stored.items() if value}
    if contacts:
        metadata["contacts"] = contacts
    metadata["token_endpoint_auth_method"] = method
    # OpenID Connect Dynamic Client Registration §2: how its ID tokens are signed (RS256 default).
    id_token_alg = data.get("id_token_signed_response_alg", IdTokenAlgorithm.RS256)
    if id_token_alg not in IdTokenAlgorithm.values:
        raise RegistrationError(
            "invalid_client_metadata",
            f"id_token_signed_response_alg must be {' or '.join(IdTokenAlgorithm.values)}.",
        )
    return {
        "name": name,
        "kind": AUTH_METHODS[method],
        "redirect_uris": redirect_uris,
        "post_logout_redirect_uris": post_logout_redirect_uris,
        "scopes": scopes,
        "website_url": _text(data, "client_uri", max_length=500),
        "privacy_policy_url": _text(data, "policy_uri", max_length=500),
        "terms_url": _text(data, "tos_uri", max_length=500),
        "metadata": metadata,
        "id_token_signed_response_alg": id_token_alg,
    }


def registration_document(client: OAuthClient) -> dict:
    """What RFC 7591 §3.2.1 returns (and what a client ID metadata document client is shown as)."""
    stored = client.registration_metadata or {}
    document = {
        "client_id": client.client_id,
        "client_id_issued_at": int(client.created.timestamp()),
        "client_name": client.name,
        "redirect_uris": client.redirect_uri_list,
        "grant_types": list(GRANT_TYPES),
        "response_types": ["code"],
        "token_endpoint_auth_method": stored.get(
            "token_endpoint_auth_method", "none" if client.client_type == ClientKind.PUBLIC else "client_secret_basic"
        ),
        "scope": " ".join(client.scope_list),
        "id_token_signed_response_alg": client.id_token_signed_response_alg,
    }
    if client.post_logout_redirect_uri_list:
        document["post_logout_redirect_uris"] = client.post_logout_redirect_uri_list
    for key, value in (
        ("client_uri", client.website_url),
        ("policy_uri", client.privacy_policy_url),
        ("tos_uri", client.terms_url),
    ):
        if value:
            document[key] = value
    for key in (*STORED_TEXT, "contacts"):
        if stored.get(key):
            document[key] = stored[key]
    return document


_FIELD_ERRORS = {
    "redirect_uris": "invalid_redirect_uri",
}
_FIELD_NAMES = {
    "name": "client_name",
    "website_url": "client_uri",
    "privacy_policy_url": "policy_uri",
    "terms_url": "tos_uri",
    "scopes": "scope",
}


def _validation_refusal(exc: ValidationError) -> JsonResponse:
    errors = exc.message_dict
    # A redirect URI problem is reported as such (RFC 7591 §3.2.2), before anything else.
    fields = sorted(errors, key=lambda field: field != "redirect_uris")
    error = _FIELD_ERRORS.get(fields[0], "invalid_client_metadata")
    description = "; ".join(f"{_FIELD_NAMES.get(field, field)}: {' '.join(errors[field])}" for field in fields)
    return _refusal(error, description)


class RegistrationView(DynamicClientRegistrationView):
    """POST /v2/auth/oauth2/register (RFC 7591 §3). Registers an unverified client (docs/agents.md)."""

    http_method_names = ["post", "options"]

    def post(self, request, *args, **kwargs):
        if not _registration_permitted(request):
            return _answer({"error": "access_denied", "error_description": "Registration is closed."}, 403)
        content_type = request.content_type or ""
        if content_type.lower() != "application/json":
            return _refusal("invalid_client_metadata", "Send the client metadata as a JSON object (application/json).")
        if len(request.body) > MAX_BODY_BYTES:
            return _refusal("invalid_client_metadata", f"The metadata can be at most {MAX_BODY_BYTES} bytes.")
        try:
            data = _metadata_object(request.body)
        except RecursionError:  # nesting deeper than the JSON parser goes
            data = None
        if data is None:
            return _refusal("invalid_client_metadata", "The body must be a JSON object of client metadata.")
        try:
            fields = metadata_validate(data)
            created = client_self_register(source=OAuthClient.RegistrationSource.DCR, registration_token=True, **fields)
        except RegistrationError as exc:
            return _refusal(exc.error, exc.description)
        except ValidationError as exc:
            return _validation_refusal(exc)
        document = registration_document(created.client)
        if created.secret is not None:
            document["client_secret"] = created.secret.plaintext
            document["client_secret_expires_at"] = 0
        document |= _management(created.client, created.registration_token)
        return _answer(document, 201)


def registration_client_uri(client: OAuthClient) -> str:
    return client.registration_client_uri


def _management(client: OAuthClient, token: str) -> dict:
    # RFC 7592 §3: both, in the registration answer and after each update (a rotated token).
    return {"registration_access_token": token, "registration_client_uri": registration_client_uri(client)}


def _unauthorized() -> JsonResponse:
    # RFC 7592 §2.1-2.3: a wrong or missing token, an unknown or deleted client: 401, alike, as
    # RFC 6750 §3.1 says (no hint whether the client exists).
    response = _answer(
        {"error": "invalid_token", "error_description": "The registration access token is not valid for this client."},
        401,
    )
    response["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    return response


def _bearer(request) -> str | None:
    """The registration access token (RFC 7592 §3), read as every bearer token is (scopes.bearer)."""
    try:
        return request_bearer_token(request)
    except MalformedBearer:
        return None


@method_decorator(csrf_exempt, name="dispatch")  # a bearer token, never a cookie, authorizes these calls
class RegistrationConfigurationView(View):
    """GET/PUT/DELETE /v2/auth/oauth2/register/<client_id>: RFC 7592's client configuration endpoint."""

    http_method_names = ["get", "put", "delete", "options"]

    def dispatch(self, request, *args, client_id: str = "", **kwargs):
        if request.method == "OPTIONS":
            return super().dispatch(request, *args, **kwargs)
        token = _bearer(request)
        client = client_get_for_registration_token(client_id=client_id, token=token) if token else None
        if client is None:
            return _unauthorized()
        self.client = client
        return super().dispatch(request, *args, **kwargs)

    def options(self, request, *args, **kwargs):
        return HttpResponse(status=204)

    def get(self, request, *args, **kwargs):
        # RFC 7592 §2.1; the token is not rotated on a read. A client secret is stored as a
        # digest and cannot be returned: the client keeps the one it was given.
        return _answer(
            registration_document(self.client) | {"registration_client_uri": registration_client_uri(self.client)}, 200
        )

    def put(self, request, *args, **kwargs):
        client = self.client
        if (request.content_type or "").lower() != "application/json":
            return _refusal("invalid_client_metadata", "Send the client metadata as a JSON object (application/json).")
        if len(request.body) > MAX_BODY_BYTES:
            return _refusal("invalid_client_metadata", f"The metadata can be at most {MAX_BODY_BYTES} bytes.")
        try:
            data = _metadata_object(request.body)
        except RecursionError:
            data = None
        if data is None:
            return _refusal("invalid_client_metadata", "The body must be a JSON object of client metadata.")
        # RFC 7592 §2.2: client_id must be the client's; a client_secret, if sent, the one it holds.
        if data.get("client_id") != client.client_id:
            return _refusal("invalid_client_metadata", "client_id must be this registration's client_id.")
        secret = data.get("client_secret")
        if secret is not None and not (
            isinstance(secret, str) and any(s.matches(secret) for s in client.secrets.filter(revoked_at__isnull=True))
        ):
            return _refusal("invalid_client_metadata", "client_secret does not match this client's.")
        for fixed in (
            "registration_access_token",
            "registration_client_uri",
            "client_secret_expires_at",
            "client_id_issued_at",
        ):
            data.pop(fixed, None)  # RFC 7592 §2.2: server-set values, not metadata
        try:
            fields = metadata_validate(data)
            updated = client_registration_update(client=client, **fields)
        except RegistrationError as exc:
            return _refusal(exc.error, exc.description)
        except ValidationError as exc:
            return _validation_refusal(exc)
        except InvalidTransition as exc:
            return _refusal("invalid_client_metadata", str(exc))
        document = registration_document(updated.client) | _management(updated.client, updated.registration_token)
        return _answer(document, 200)

    def delete(self, request, *args, **kwargs):
        try:
            client_registration_delete(client=self.client)
        except InvalidTransition:
            return _unauthorized()  # deleted meanwhile
        response = HttpResponse(status=204)  # RFC 7592 §2.3
        response["Cache-Control"] = "no-store"
        return response
