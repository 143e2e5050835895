"""OpenAPI (drf-spectacular) from the same scope declarations the requests are checked against.

- an `oauth2` security scheme with the authorization code flow, its URLs from the issuer, and
  every scope with its consent-screen description;
- each protected operation's `security` names exactly the scope its method needs on its route
  (scopes.declarations), public endpoints none;
- each operation's description is its own (the handler's docstring, else the view's own), never a
  base class's, followed by the scope it needs.

Use it with REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = "scopes.openapi.ScopedAutoSchema".
"""

import inspect
import re

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from scopes.catalog import SCOPES
from scopes.declarations import is_public, required_scope
from scopes.permissions import is_scoped

SCHEME_NAME = "oauth2"
AUTHORIZE_PATH = "/auth/oauth2/authorize"
TOKEN_PATH = "/v2/auth/oauth2/token"
_PATH_PARAMETER = re.compile(r"{([^}]+)}")


def operation_scope(auto_schema) -> str | None:
    """The scope the operation's method needs on its path, as the request-time check derives it."""
    path = auto_schema.path
    return required_scope(auto_schema.view, auto_schema.method, path, _PATH_PARAMETER.findall(path))


def security_scheme() -> dict:
    issuer = settings.OAUTH_ISSUER.rstrip("/")
    token_url = getattr(settings, "OAUTH_TOKEN_URL", None) or issuer + TOKEN_PATH
    return {
        "type": "oauth2",
        "description": "OAuth 2.0 authorization code flow. Public clients (single-page and native apps) must use "
        "PKCE with S256 (RFC 7636); confidential clients may. Send the access token as "
        "`Authorization: Bearer <access_token>` (header only). An ORG_ scope also grants the matching TEAM_ "
        "scope; a legacy client's token (empty scope) is not restricted by scope.",
        "flows": {
            "authorizationCode": {
                "authorizationUrl": getattr(settings, "OAUTH_AUTHORIZATION_URL", None) or issuer + AUTHORIZE_PATH,
                "tokenUrl": token_url,
                "refreshUrl": token_url,
                "scopes": {name: str(scope.description) for name, scope in SCOPES.items()},
            }
        },
    }


class OAuth2Scheme(OpenApiAuthenticationExtension):
    target_class = "scopes.authentication.BearerTokenAuthentication"
    name = SCHEME_NAME

    def get_security_definition(self, auto_schema):
        return security_scheme()

    def get_security_requirement(self, auto_schema):
        scope = operation_scope(auto_schema)
        # A method declared for no scope accepts only a legacy client's unrestricted token.
        return {self.name: [scope] if scope in SCOPES else []}


class ScopedAutoSchema(AutoSchema):
    def get_auth(self):
        if is_scoped(self.view) and is_public(self.view):
            return []  # no security requirement: no token needed
        return super().get_auth()

    def get_description(self):
        handler = getattr(self.view, getattr(self.view, "action", None) or self.method.lower(), None)
        # Own docstrings only: inspect.getdoc() would inherit a base class's (ScopedApiView's).
        own = getattr(handler, "__doc__", None) or type(self.view).__dict__.get("__doc__")
        description = inspect.cleandoc(own) if own else ""
        if not is_scoped(self.view):
            return description
        return "\n\n".join(part for part in (description, self._scope_sentence()) if part)

    def _scope_sentence(self) -> str:
        if is_public(self.view):
            return "Public endpoint: no access token needed."
        scope = operation_scope(self)
        if scope not in SCOPES:
            return "Declares no scope: only a legacy client's unrestricted token is accepted."
        sentence = f"Required scope: `{scope}`."
        if scope.startswith("TEAM_") and "ORG_" + scope[5:] in SCOPES:
            sentence += f" `ORG_{scope[5:]}` also grants it."
        return sentence
