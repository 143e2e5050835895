"""What the server publishes for anyone to fetch: its metadata (RFC 8414) and OpenID Connect
Discovery's document, the JWKS its signatures verify with, and the token status lists of its JWT
access tokens (draft-ietf-oauth-status-list). Each lists or serves what the other rooms issue.
"""

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.views import View
from oauth2_provider.views.oidc import ConnectDiscoveryInfoView

from accounts.selectors import ACR_VALUES_SUPPORTED
from oauthclients.models import IdTokenAlgorithm
from oauthflows.grants import GRANT_TYPES
from oauthflows.pages.authorization import PROMPT_VALUES
from oauthflows.token.userinfo import EMAIL_CLAIMS, PROFILE_CLAIMS
from plumbing.languages import ui_locales_supported
from scopes.catalog import OPENID_SCOPES, SCOPE_NAMES
from signing.keys import SigningKeyUnusable, jwks_document
from signing.statuslist import list_ttl, status_list_token


class MetadataView(View):
    """GET /.well-known/oauth-authorization-server (RFC 8414)."""

    http_method_names = ["get", "head", "options"]

    def get(self, request, *args, **kwargs):
        response = JsonResponse(server_metadata())
        response["Cache-Control"] = "public, max-age=3600"
        return response


def server_metadata() -> dict:
    """RFC 8414 §2: the authorization server's metadata (openid_configuration below adds OpenID's)."""
    issuer = settings.OAUTH_ISSUER
    return {
        "issuer": issuer,
        "authorization_endpoint": issuer + settings.OAUTH_AUTHORIZE_PATH,
        "token_endpoint": issuer + settings.OAUTH_TOKEN_PATH,
        "revocation_endpoint": issuer + settings.OAUTH_REVOKE_PATH,
        "introspection_endpoint": issuer + settings.OAUTH_INTROSPECT_PATH,
        "scopes_supported": list(SCOPE_NAMES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": list(GRANT_TYPES),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "authorization_response_iss_parameter_supported": True,
        # The languages of the login and consent pages (settings.LANGUAGES, accounts.languages).
        "ui_locales_supported": ui_locales_supported(),
        "jwks_uri": issuer + settings.OAUTH_JWKS_PATH,
        # OpenID Connect (docs/openid-connect.md), also named here for RFC 8414 clients.
        "userinfo_endpoint": issuer + settings.OAUTH_USERINFO_PATH,
        "end_session_endpoint": issuer + settings.OAUTH_END_SESSION_PATH,
        # RFC 7591 (docs/agents.md): absent when OAUTH_DYNAMIC_REGISTRATION=off.
        **(
            {
                "registration_endpoint": issuer + settings.OAUTH_REGISTRATION_PATH,
                "client_id_metadata_document_supported": True,
            }
            if settings.OAUTH_DYNAMIC_REGISTRATION != "off"
            else {"client_id_metadata_document_supported": False}
        ),
    }


class JwksView(View):
    """GET /.well-known/jwks.json (RFC 7517): the public parts of every published signing key.

    Cacheable for five minutes, less than OAUTH_SIGNING_KEY_PUBLISH_AHEAD (ten by default), so a
    verifier has a rotated-in key before anything is signed with it.
    """

    http_method_names = ["get", "head", "options"]

    def get(self, request, *args, **kwargs):
        response = JsonResponse(jwks_document())
        response["Cache-Control"] = "public, max-age=300"
        response["Access-Control-Allow-Origin"] = "*"
        return response


class StatusListView(View):
    """GET /v2/auth/oauth2/status-lists/<number> (draft-ietf-oauth-status-list): the signed
    `statuslist+jwt` of one list of JWT access tokens' bits (signing.statuslist), public and
    cacheable for its ttl. An unknown list is 404; no signing key is 503 (`check --deploy` warns)."""

    http_method_names = ["get", "head", "options"]

    def get(self, request, number: int, *args, **kwargs):
        try:
            token = status_list_token(number)
        except (LookupError, SigningKeyUnusable) as exc:
            # No current key, or one this deployment's encryption key does not open (config.E005).
            reason = "No signing key" if isinstance(exc, LookupError) else "The signing key cannot be used"
            response = JsonResponse(
                {"error": "temporarily_unavailable", "error_description": f"{reason}: the list cannot be signed."},
                status=503,
            )
            response["Retry-After"] = "5"
            response["Cache-Control"] = "no-store"
            return response
        if token is None:
            response = JsonResponse({"error": "not_found", "error_description": "No such status list."}, status=404)
            response["Cache-Control"] = "no-store"
        else:
            response = HttpResponse(token, content_type="application/statuslist+jwt")
            response["Cache-Control"] = f"public, max-age={list_ttl()}"
        response["Access-Control-Allow-Origin"] = "*"
        return response


def openid_configuration() -> dict:
    """OpenID Connect Discovery 1.0 §3: the RFC 8414 document plus what OpenID adds."""
    issuer = settings.OAUTH_ISSUER
    return server_metadata() | {
        "scopes_supported": [*OPENID_SCOPES, *server_metadata()["scopes_supported"]],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": list(IdTokenAlgorithm.values),
        "claims_supported": [
            "sub",
            "iss",
            "aud",
            "exp",
            "iat",
            "auth_time",
            "nonce",
            "at_hash",
            "sid",
            "amr",
            "acr",
            *PROFILE_CLAIMS,
            *EMAIL_CLAIMS,
        ],
        "prompt_values_supported": list(PROMPT_VALUES),
        # docs/accounts.md: one factor, or two (acr_values asking for two makes the login ask).
        "acr_values_supported": list(ACR_VALUES_SUPPORTED),
        "claims_parameter_supported": False,
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "end_session_endpoint": issuer + settings.OAUTH_END_SESSION_PATH,
    }


class OpenIDConfigurationView(ConnectDiscoveryInfoView):
    """GET /.well-known/openid-configuration: DOT's discovery view, answering with this server's
    real endpoints and algorithms (DOT's names its own URLs and OIDC_RSA_PRIVATE_KEY's RS256)."""

    http_method_names = ["get", "head", "options"]

    def get(self, request, *args, **kwargs):
        response = JsonResponse(openid_configuration())
        response["Cache-Control"] = "public, max-age=3600"
        return response
