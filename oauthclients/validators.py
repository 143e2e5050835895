"""Rules for what may be registered on a client (spec §2.1, §8; SECURITY.md)."""

import io
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


# Logos: an upload is at most this many bytes and pixels, and is stored re-encoded as a PNG of at
# most LOGO_SIZE pixels a side, so that what users see is an image we produced, from this origin.
MAX_LOGO_BYTES = 256 * 1024
MAX_LOGO_PIXELS = 2048 * 2048
LOGO_SIZE = 128
LOGO_FORMATS = {"PNG", "JPEG", "GIF", "WEBP"}


def logo_reencode(data: bytes) -> bytes:
    """Check that `data` is a PNG, JPEG, GIF or WebP image within the limits; return it as a small PNG.

    Re-encoding drops whatever else the file carried (metadata, trailing bytes, other frames), and
    the pixel limit is checked before decoding, so a decompression bomb is refused unread.
    """
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise ValidationError("The logo file is empty.", code="logo_empty")
    if len(data) > MAX_LOGO_BYTES:
        raise ValidationError(f"The logo can be at most {MAX_LOGO_BYTES // 1024} KB.", code="logo_too_large")
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.format not in LOGO_FORMATS:
                raise ValidationError("The logo must be a PNG, JPEG, GIF or WebP image.", code="logo_format")
            width, height = image.size
            if width * height > MAX_LOGO_PIXELS:
                raise ValidationError("The logo can be at most 2048 × 2048 pixels.", code="logo_too_many_pixels")
            image.load()
            image = image.convert("RGBA")
            image.thumbnail((LOGO_SIZE, LOGO_SIZE))
            out = io.BytesIO()
            image.save(out, format="PNG", optimize=True)
    except ValidationError:
        raise
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError, SyntaxError):
        raise ValidationError("The logo must be a PNG, JPEG, GIF or WebP image.", code="logo_format") from None
    return out.getvalue()


def validate_optional_url(value: str, *, label: str) -> str:
    """An optional http(s) link shown to users (privacy policy, terms): empty, or a URL of at most 500."""
    from django.core.validators import URLValidator

    value = (value or "").strip()
    if not value:
        return ""
    if len(value) > 500 or "\x00" in value:
        raise ValidationError(f"The {label} URL can be at most 500 characters.")
    try:
        URLValidator(schemes=["http", "https"])(value)
    except ValidationError:
        raise ValidationError(f"Enter the {label} as an http(s) URL.") from None
    return value
