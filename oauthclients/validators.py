"""Rules for what may be registered on a client (spec §2.1, §8; SECURITY.md)."""

import re
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

from scopes.catalog import UnknownScopeError, parse_scopes

MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_LENGTH = 2000
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}
# RFC 3986 §2: the only characters a URI may contain. Browsers read others (a backslash above all)
# differently from urlsplit, so the host a reviewer sees would not be where the codes go.
URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


def validate_redirect_uri(uri: str) -> str:
    """One registered redirect URI: absolute, https unless loopback, no fragment, no userinfo."""
    if not uri or uri != uri.strip() or any(ch.isspace() for ch in uri):
        raise ValidationError("A redirect URI cannot be empty or contain spaces.", code="redirect_uri_space")
    if len(uri) > MAX_REDIRECT_URI_LENGTH:
        raise ValidationError(
            f"A redirect URI can be at most {MAX_REDIRECT_URI_LENGTH} characters.", code="redirect_uri_length"
        )
    if not uri.isascii() or not uri.isprintable():
        raise ValidationError(f"{uri!r}: use percent-encoding for non-ASCII characters.", code="redirect_uri_ascii")
    if not URI_CHARACTERS.fullmatch(uri):
        raise ValidationError(
            f'{uri!r} contains characters a URI cannot hold (such as \\ < > " {{ }}); percent-encode them.',
            code="redirect_uri_invalid",
        )
    try:
        parts = urlsplit(uri)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ValidationError(f"{uri} is not a valid URL.", code="redirect_uri_invalid") from None
    if "#" in uri:
        raise ValidationError(f"{uri}: a redirect URI cannot contain a fragment (#).", code="redirect_uri_fragment")
    if parts.scheme not in ("http", "https") or not host or "%" in host:
        raise ValidationError(f"{uri} must be an absolute http(s) URL with a host.", code="redirect_uri_invalid")
    if parts.username is not None or parts.password is not None:
        raise ValidationError(f"{uri}: a redirect URI cannot contain user information.", code="redirect_uri_userinfo")
    if "*" in parts.netloc:
        raise ValidationError(f"{uri}: wildcards are not allowed.", code="redirect_uri_wildcard")
    if parts.scheme == "http" and host not in LOOPBACK_HOSTS:
        raise ValidationError(
            f"{uri} must use https (plain http is allowed only for localhost, 127.0.0.1 and [::1]).",
            code="redirect_uri_https",
        )
    return uri


def validate_redirect_uris(uris: list[str]) -> list[str]:
    """1 to 10 distinct, valid redirect URIs; every problem is reported."""
    uris = list(dict.fromkeys(uris))
    errors: list[ValidationError] = []
    if not uris:
        errors.append(ValidationError("Register at least one redirect URI.", code="redirect_uris_empty"))
    if len(uris) > MAX_REDIRECT_URIS:
        # Report the count alone: validating (and echoing) thousands of lines helps nobody.
        raise ValidationError(
            f"A client can have at most {MAX_REDIRECT_URIS} redirect URIs (got {len(uris)}).",
            code="redirect_uris_too_many",
        )
    for uri in uris:
        try:
            validate_redirect_uri(uri)
        except ValidationError as exc:
            errors.extend(exc.error_list)
    if errors:
        raise ValidationError(errors)
    return uris


def validate_scope_names(names: list[str]) -> list[str]:
    """At least one scope, all from the catalog."""
    try:
        parsed = parse_scopes(" ".join(names))
    except UnknownScopeError as exc:
        raise ValidationError(str(exc), code="scope_unknown") from None
    if not parsed:
        raise ValidationError("Select at least one scope.", code="scopes_empty")
    return parsed
