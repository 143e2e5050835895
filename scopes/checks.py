"""System checks: every routed scope declaration is valid before the first request (`manage.py check`).

Each error names the view's dotted path and its route. Nothing about a declaration is left to fail
first at request time.
"""

import re

from django.conf import settings
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, URLResolver, get_resolver

from scopes.catalog import SCOPES
from scopes.declarations import HTTP_METHODS, RESOURCES, is_public, required_scope, served_methods
from scopes.introspection import credentials_try
from scopes.jwt import JwtVerifier
from scopes.permissions import is_scoped

_PLACEHOLDER = re.compile(r"<(?:[^>:]+:)?([^>]+)>")


def routes(urlconf=None):
    """(path, kwarg names, view class) of every class-based view's route, nested includes followed.

    Paths are written as OpenAPI writes them: `/v2/teams/{teamId}/bookings`.
    """
    return _routes(get_resolver(urlconf))


def _routes(resolver, prefix: str = "", names: tuple[str, ...] = ()):
    for entry in resolver.url_patterns:
        pattern = entry.pattern
        route = prefix + str(pattern)
        converters = getattr(pattern, "converters", None)
        kwargs = names + tuple(converters if converters is not None else pattern.regex.groupindex)
        if isinstance(entry, URLResolver):
            yield from _routes(entry, route, kwargs)
        elif isinstance(entry, URLPattern):
            view = getattr(entry.callback, "cls", None) or getattr(entry.callback, "view_class", None)
            if view is not None:
                path = "/" + _PLACEHOLDER.sub(r"{\1}", route.replace("^", "").replace("$", "").replace("\\Z", ""))
                yield path, kwargs, view


def _dotted(view) -> str:
    return f"{view.__module__}.{view.__qualname__}"


def declaration_errors(view, path: str, kwarg_names=()) -> list[str]:
    """What is wrong with `view`'s scope declaration on this route (empty when nothing is)."""
    if is_public(view):
        return []
    problems = []
    declared = getattr(view, "required_scopes", None) or {}
    served = served_methods(view)
    if not isinstance(declared, dict):
        return ["required_scopes must be a dict of HTTP method -> scope name"]
    for method, scope in declared.items():
        if method not in HTTP_METHODS:
            problems.append(f"required_scopes names {method!r}, which is not an HTTP method (use upper case)")
        elif method not in served and not (method == "HEAD" and "GET" in served):
            problems.append(f"required_scopes names {method}, a method the view does not serve")
        if scope not in SCOPES:
            problems.append(f"required_scopes[{method!r}] names an unknown scope {scope!r}")
    resource = getattr(view, "scope_resource", None)
    if resource:
        if resource not in RESOURCES:
            problems.append(f"scope_resource {resource!r} is not a resource of any scope")
        else:
            for method in served:
                needed = required_scope(view, method, path, kwarg_names)
                if method not in declared and needed not in SCOPES:
                    problems.append(
                        f"scope_resource {resource!r} on this route needs {needed} for {method}, which does not exist"
                    )
    return problems


@register("scopes")
def check_scope_declarations(app_configs=None, urlconf=None, **kwargs):
    errors = []
    seen = set()
    scoped_routes = False
    for path, kwarg_names, view in routes(urlconf):
        if not is_scoped(view):
            continue
        scoped_routes = True
        for problem in declaration_errors(view, path, kwarg_names):
            if (view, path, problem) in seen:
                continue
            seen.add((view, path, problem))
            errors.append(Error(f"{_dotted(view)} at {path}: {problem}.", obj=_dotted(view), id="scopes.E001"))
    if (
        scoped_routes
        and getattr(settings, "OAUTH_TOKEN_VERIFIER", None) == "scopes.introspection.IntrospectionVerifier"
    ):
        missing = [
            name
            for name in ("OAUTH_INTROSPECTION_URL", "OAUTH_RESOURCE_SERVER_ID", "OAUTH_RESOURCE_SERVER_SECRET")
            if not getattr(settings, name, None)
        ]
        if missing:
            errors.append(
                Error(
                    f"Verifying tokens by introspection needs {', '.join(missing)}.",
                    hint="Create the credentials on the authorization server with "
                    "`manage.py oauthclient create --resource-server` (docs/protecting-endpoints.md).",
                    id="scopes.E003",
                )
            )
    if scoped_routes and getattr(settings, "OAUTH_TOKEN_VERIFIER", None) == "scopes.jwt.JwtVerifier":
        try:
            JwtVerifier()
        except ImproperlyConfigured as exc:
            errors.append(
                Error(
                    f"Verifying JWT access tokens: {exc}",
                    hint="Set OAUTH_ISSUER to the authorization server and OAUTH_RESOURCE_URI to this "
                    "service's resource URI (docs/protecting-endpoints.md).",
                    id="scopes.E004",
                )
            )
    if scoped_routes and not getattr(settings, "OAUTH_TOKEN_VERIFIER", None):
        errors.append(
            Error(
                "OAUTH_TOKEN_VERIFIER is not set, so scoped views cannot verify tokens.",
                hint="tokens.verifier.LocalTokenVerifier in the authorization server, "
                "scopes.introspection.IntrospectionVerifier in another service.",
                id="scopes.E002",
            )
        )
    return errors


@register("scopes", deploy=True)
def check_introspection_credentials(app_configs=None, **kwargs):
    """`manage.py check --deploy`: try this service's introspection credentials once, so that a typo
    in OAUTH_RESOURCE_SERVER_ID or _SECRET is caught before traffic, not read as an outage."""
    if getattr(settings, "OAUTH_TOKEN_VERIFIER", None) != "scopes.introspection.IntrospectionVerifier":
        return []
    names = ("OAUTH_INTROSPECTION_URL", "OAUTH_RESOURCE_SERVER_ID", "OAUTH_RESOURCE_SERVER_SECRET")
    if not all(getattr(settings, name, None) for name in names):
        return []  # scopes.E003 says what is missing

    problem = credentials_try()
    return [problem] if problem else []
