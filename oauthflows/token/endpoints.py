"""The endpoints apps call directly: token (RFC 6749), revocation (RFC 7009) and introspection
(RFC 7662). All on django-oauth-toolkit's mixin and oauthlib's endpoints, with our request checks
in front and our response shapes behind. What the server publishes about them (RFC 8414) is
oauthflows.discovery's.
"""

import json

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.db import transaction
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.debug import sensitive_post_parameters
from oauth2_provider.signals import app_authorized
from oauth2_provider.views.mixins import OAuthLibMixin
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from oauthclients.selectors import client_is_public
from oauthflows.grants import GRANT_TYPES, GRANTS, GRANTS_BY_TYPE, GrantType, grant_types_text, token_response
from oauthflows.token.clientcall import ClientCall, client_call
from oauthflows.token.oauth2 import request_attribute_names, request_started_at
from oauthflows.token.openapi import introspect_schema, revoke_schema, token_schema
from plumbing.errors import service_unavailable
from plumbing.ratelimit import per_client
from plumbing.requestparams import (
    CREDENTIAL_PARAMS,
    REPEATABLE_PARAMS,
    BodyError,
    basic_credentials,
    request_json_pairs,
)
from signing.keys import SigningKeyUnusable

FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
JSON_CONTENT_TYPE = "application/json"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
REQUEST_ATTRIBUTE_NAMES = request_attribute_names()
CLIENT_PARAMS = frozenset({"client_id", "client_secret"})

DEFAULT_DESCRIPTIONS = {
    "invalid_grant": (
        "The authorization code or refresh token is invalid, expired, revoked or was issued to another client."
    ),
    "unsupported_grant_type": f"grant_type must be {grant_types_text()}.",
    "invalid_scope": "The requested scope is invalid or wider than the original grant.",
    "unauthorized_client": "This client may not use this grant type.",
}


def ascii_description(text: str) -> str:
    """RFC 6749 §5.2: error_description is printable ASCII (%x20-21 / %x23-5B / %x5D-7E)."""
    text = str(text).replace("“", "'").replace("”", "'").replace("’", "'")
    return "".join(ch for ch in text if 0x20 <= ord(ch) <= 0x7E and ch not in '"\\')


def _json(payload: dict, status: int = 200) -> JsonResponse:
    response = JsonResponse(payload, status=status)
    for header, value in NO_STORE.items():
        response[header] = value
    return response


# Django's error reports (mailed to ADMINS, sent to error trackers) must not list these values.
@method_decorator(sensitive_post_parameters(*CREDENTIAL_PARAMS), name="dispatch")
class ClientEndpoint(OAuthLibMixin, APIView):
    """POST endpoints where a client authenticates (Basic or body) and sends form or JSON.

    An APIView only so that the OpenAPI schema describes it (oauthflows/token/openapi.py): DRF
    authenticates, parses, negotiates and handles errors for nothing here. The view reads the
    Django request, answers with Django responses, and lets exceptions through, exactly as a
    plain Django view would. CSRF-exempt (APIView.as_view).
    """

    http_method_names = ["post", "options"]
    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = []
    throttle_classes = []
    # The error codes this endpoint may answer with; anything else oauthlib says is invalid_request.
    errors: frozenset[str] = frozenset({"invalid_request", "invalid_client"})
    # Only introspection answers resource servers; elsewhere they are unauthorized_client.
    resource_servers_allowed = False
    # The parameters this endpoint takes; other names of oauthlib Request attributes are refused.
    accepted: frozenset[str] = CLIENT_PARAMS | {"token", "token_type_hint"}

    def perform_authentication(self, request):
        pass  # request.user stays Django's (lazy) user

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)  # any Accept header: JSON

    @property
    def default_response_headers(self):
        return {}  # no Allow/Vary added to every response

    def http_method_not_allowed(self, request, *args, **kwargs):
        return View.http_method_not_allowed(self, request._request, *args, **kwargs)  # empty 405

    def handle_exception(self, exc):
        raise exc  # Django's handlers answer, not the /v2 exception handler

    def options(self, request, *args, **kwargs):
        # RFC 9110 §9.3.7. A CORS preflight never gets here: django-cors-headers answers it.
        response = HttpResponse(status=204)
        response["Allow"] = "POST, OPTIONS"
        return response

    def post(self, request, *args, **kwargs):
        call = ClientCall(resource_servers_allowed=self.resource_servers_allowed)
        reset = client_call.set(call)
        try:
            response = self.answer(request._request)  # the Django request, not DRF's wrapper
        finally:
            client_call.reset(reset)
        # The rate limiter reads these: a resource server's introspections are not counted, except
        # those it asks about a token that is not active (a service relaying junk tokens).
        response.answered_resource_server = call.client is not None and call.client.is_resource_server
        response.answered_inactive = getattr(request, "_answered_inactive", False)
        if response.status_code == 401:
            # A public client has no secret, so no per-client failure limit (plumbing.ratelimit):
            # looked up for every failed authentication alike, unknown client_ids included, so
            # that an unknown client and a wrong secret still take the same time.
            response.answered_public_client = client_is_public(client_id=per_client(request._request))
        return response

    def answer(self, request) -> HttpResponse:
        # RFC 9110 §11.1: the scheme name is case-insensitive.
        self.basic_used = request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("basic ")
        params, problem = self.read_params(request)
        if problem is None:
            problem = self.check(params)
        if problem:
            return self.error(*problem)
        try:
            status, body = self.respond(request)
        except BodyError as exc:
            return self.error("invalid_request", str(exc))
        except SigningKeyUnusable:
            # The deployment's encryption key does not open the signing keys (config.E005): 503, and
            # the code or refresh token stays unused (the exchange's transaction rolled back).
            return service_unavailable(request)
        try:
            data = json.loads(body or "{}")
        except ValueError:
            data = {}
        if status != 200:
            error = data.get("error", "invalid_request")
            return self.error(
                error, data.get("error_description") or DEFAULT_DESCRIPTIONS.get(error, "The request is invalid.")
            )
        return self.success(data)

    def unsupported(self, params) -> tuple[str, str] | None:
        """A refusal that outranks every other check of the parameters (none here)."""
        return None

    def read_params(self, request) -> tuple[dict, tuple[str, str] | None]:
        """Refuse malformed requests before any lookup or hashing."""
        content_type = request.content_type
        if content_type not in (FORM_CONTENT_TYPE, JSON_CONTENT_TYPE):
            return {}, (
                "invalid_request",
                "Send the request body as application/x-www-form-urlencoded or application/json.",
            )
        if any(name in request.GET for name in CREDENTIAL_PARAMS):
            return {}, ("invalid_request", "Credentials and tokens belong in the request body, never in the URL.")
        try:
            if content_type == FORM_CONTENT_TYPE:
                repeated = sorted(
                    key for key, values in request.POST.lists() if len(values) > 1 and key not in REPEATABLE_PARAMS
                )
                if repeated:
                    return {}, ("invalid_request", "Each parameter may be sent only once: " + ", ".join(repeated) + ".")
                params = request.POST.dict()
            else:
                params = dict(request_json_pairs(request))
        except BodyError as exc:
            return {}, ("invalid_request", str(exc))
        except (RequestDataTooBig, TooManyFieldsSent):
            return {}, ("invalid_request", "The request body is too large.")
        if any("\x00" in str(text) for pair in [*params.items(), *request.GET.items()] for text in pair):
            # PostgreSQL text cannot hold NUL: refused here, once, for every parameter on every
            # database (a value that reached a query would be a 500 on PostgreSQL only).
            return params, ("invalid_request", "Parameters cannot contain NUL characters.")
        unsupported = self.unsupported(params)
        if unsupported:
            return params, unsupported
        colliding = sorted(
            name
            for name in {*params, *request.GET}
            if name not in self.accepted and (name in REQUEST_ATTRIBUTE_NAMES or name.startswith("_"))
        )
        if colliding:
            # oauthlib would serve these values as its own request attributes (see
            # request_attribute_names); RFC 6749 §3.2 lets us ignore unknown parameters, but
            # these are not unknown to the code that reads them.
            return params, ("invalid_request", "These parameters are not accepted here: " + ", ".join(colliding) + ".")
        if self.basic_used and "client_secret" in params:
            return params, (
                "invalid_request",
                "Use one client authentication method: HTTP Basic or client_secret in the body, not both.",
            )
        if self.basic_used and params.get("client_id"):
            credentials = basic_credentials(request.META["HTTP_AUTHORIZATION"][6:].strip())
            if credentials is not None and credentials[0] != params["client_id"]:
                # RFC 6749 §2.3: one client per request; two different client_ids are ambiguous.
                return params, ("invalid_request", "The client_id in the body differs from the one in HTTP Basic.")
        return params, None

    def check(self, params: dict) -> tuple[str, str] | None:
        return None

    def respond(self, request) -> tuple[int, str]:
        raise NotImplementedError

    def success(self, data: dict) -> HttpResponse:
        return _json(data)

    def error(self, error: str, description: str) -> JsonResponse:
        if error not in self.errors:
            error = "invalid_request"
        if error == "invalid_client":
            # Unknown client, wrong or revoked secret, unapproved client: one answer for all.
            description = "Client authentication failed."
        response = _json(
            {"error": error, "error_description": ascii_description(description)},
            status=401 if error == "invalid_client" else 400,
        )
        if error == "invalid_client":
            # RFC 6749 §5.2: the challenge names the scheme the client may use, HTTP Basic (a 401
            # must carry one, RFC 9110 §15.5.2). Never Bearer: these endpoints take no bearer token.
            response["WWW-Authenticate"] = 'Basic realm="oauth"'
        return response


@token_schema
class TokenView(ClientEndpoint):
    """POST /v2/auth/oauth2/token (spec §4.2, §4.3): the grants of oauthflows.grants."""

    errors = frozenset(
        {
            "invalid_request",
            "invalid_client",
            "invalid_grant",
            "unauthorized_client",
            "unsupported_grant_type",
            "invalid_scope",
            "invalid_target",
        }
    )  # RFC 6749 §5.2 and RFC 8707 §2, nothing else
    # Each grant's parameters, as it declares them (oauthflows.grants).
    accepted = CLIENT_PARAMS.union(*(grant.parameters for grant in GRANTS))
    grant: GrantType | None = None  # the request's, once its parameters are read

    def unsupported(self, params):
        # RFC 6749 §5.2: an unsupported grant type is reported as such, whatever else the body
        # holds (parameters of that other grant included), as strict clients expect.
        grant_type = params.get("grant_type")
        if grant_type and grant_type not in GRANT_TYPES:
            return "unsupported_grant_type", DEFAULT_DESCRIPTIONS["unsupported_grant_type"]
        return None

    def check(self, params):
        grant_type = params.get("grant_type")
        if not grant_type:
            return "invalid_request", "The grant_type parameter is required."
        # Any other grant_type was refused as unsupported_grant_type before the checks (unsupported).
        self.grant = GRANTS_BY_TYPE[grant_type]
        if self.grant.resource_servers_allowed:
            # RFC 8693: the one grant a resource server may use (oauthflows.token.exchange checks the rest).
            client_call.get().resource_servers_allowed = True
        return self.grant.check(params) if self.grant.check else None

    def respond(self, request):
        started = request_started_at.set(timezone.now())
        try:
            # One transaction per exchange: the code or refresh-token row lock is held until the
            # new tokens are committed, so concurrent duplicates have exactly one winner.
            with transaction.atomic():
                _url, _headers, body, status = self.create_token_response(request)
                call = client_call.get()
                if status != 200 and call is not None and call.claimed:
                    # Refused after its code or refresh token was claimed (tokens.redemption):
                    # the claim is undone with everything else the request wrote.
                    transaction.set_rollback(True)
        finally:
            request_started_at.reset(started)
        call = client_call.get()
        if status == 200 and call is not None and call.issued is not None:
            # As DOT's own TokenView does, once the tokens are committed: receivers of
            # oauth2_provider.signals.app_authorized see every exchange and refresh.
            app_authorized.send(sender=self.__class__, request=request, token=call.issued)
        return status, body

    def success(self, data):
        # The one answer of every grant (oauthflows.grants.token_response).
        return _json(token_response(self.grant, data))


def _check_token_param(params) -> tuple[str, str] | None:
    # RFC 7009 §2.1 / RFC 7662 §2.1: token_type_hint is only a hint; an unknown one is ignored and
    # every token type is searched (Validator._own_token), never unsupported_token_type.
    if not params.get("token"):
        return "invalid_request", "The token parameter is required."
    return None


@revoke_schema
class RevokeView(ClientEndpoint):
    """POST /v2/auth/oauth2/revoke (RFC 7009): a client revokes its own access or refresh token.

    Unknown or foreign tokens answer 200 and nothing happens (RFC 7009 §2.2).
    """

    errors = frozenset({"invalid_request", "invalid_client", "unauthorized_client"})

    def check(self, params):
        return _check_token_param(params)

    def respond(self, request):
        with transaction.atomic():
            _url, _headers, body, status = self.create_revocation_response(request)
        return status, body

    def success(self, data):
        # RFC 7009 §2.2: 200 whatever the token was; the body is empty, so no Content-Type claims
        # it is HTML (Django's default).
        response = HttpResponse(status=200)
        del response["Content-Type"]
        for header, value in NO_STORE.items():
            response[header] = value
        return response


@introspect_schema
class IntrospectView(ClientEndpoint):
    """POST /v2/auth/oauth2/introspect (RFC 7662).

    A resource server asks about any access token this server issued (the hot path of every API
    call in other services); an app's confidential client asks about its own access and refresh
    tokens. Anything else — a refresh token asked by a resource server, another client's token, an
    unknown, expired or revoked one, a public client asking — is `{"active": false}` and nothing more.
    """

    resource_servers_allowed = True

    def check(self, params):
        if not self._secret_presented(params):
            # Metadata lists no "none" for introspection: a client without a secret (a public
            # client) is refused as unauthenticated rather than told {"active": false}.
            return "invalid_client", "Client authentication failed."
        return _check_token_param(params)

    def _secret_presented(self, params) -> bool:
        if self.basic_used:
            credentials = basic_credentials(self.request.META["HTTP_AUTHORIZATION"][6:].strip())
            return credentials is None or credentials[1] != ""  # malformed Basic fails later
        return bool(params.get("client_secret"))

    def respond(self, request):
        core = self.get_oauthlib_core()
        uri, http_method, body, headers = core._extract_params(request)
        _headers, body, status = core.server.create_introspect_response(uri, http_method, body, headers)
        return status, body

    def success(self, data):
        if not data.get("active"):
            self.request._answered_inactive = True
            return _json({"active": False})
        return _json(data)
