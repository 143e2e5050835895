"""Rules for what may be registered on a client (spec §2.1, §8; SECURITY.md)."""

import contextlib
import io
import re
import time
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

import icu
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils.translation import gettext, gettext_lazy, pgettext_lazy
from PIL import Image, ImageFile, UnidentifiedImageError

from scopes.catalog import UnknownScopeError, parse_scopes
from scopes.loopback import is_loopback_host

MAX_REDIRECT_URIS = 10  # a client's redirect URIs, and its post-logout redirect URIs: however registered
# The longest URI accepted anywhere: a redirect URI, a resource indicator (RFC 8707), a logo_uri.
MAX_URI_LENGTH = 2000
# The longest link shown to users (website, privacy policy, terms): the length of their columns.
MAX_LINK_URL_LENGTH = 500
# RFC 8252 §7.1: a native app's private-use scheme is a reverse domain name it controls, so it
# has at least one dot (com.example.app). Lowercase, as RFC 3986 §3.1 makes it canonical.
PRIVATE_USE_SCHEME = re.compile(r"[a-z][a-z0-9+\-]*(?:\.[a-z0-9+\-]+)+")
ANY_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
# RFC 8252 §7.3: a loopback IP literal redirect; the port is chosen by the app at run time.
LOOPBACK_IP_REDIRECT = re.compile(r"http://(127\.0\.0\.1|\[::1\])(?::([0-9]{1,5}))?([/?][^#@\\]*)?")
# RFC 3986 §2: the only characters a URI may contain. Browsers read others (a backslash above all)
# differently from urlsplit, so the host a reviewer sees would not be where the codes go.
URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


def is_private_use_redirect(uri: str) -> bool:
    """A native app's redirect URI with its own reverse-domain scheme (RFC 8252 §7.1)."""
    scheme, colon, _ = uri.partition(":")
    return bool(colon) and PRIVATE_USE_SCHEME.fullmatch(scheme) is not None


def loopback_ip_redirect_without_port(uri: str) -> str | None:
    """`http://127.0.0.1/…` or `http://[::1]/…` with the port removed, or None for other URIs.

    RFC 8252 §7.3: the authorization server must accept any port for a loopback IP literal.
    Everything but the port still has to match exactly.
    """
    match = LOOPBACK_IP_REDIRECT.fullmatch(uri)
    if match is None or not URI_CHARACTERS.fullmatch(uri):
        return None
    host, port, rest = match.groups()
    if port is not None and not 0 < int(port) < 65536:
        return None
    return f"http://{host}{rest or ''}"


def web_origin(uri: str) -> str | None:
    """The RFC 6454 origin a browser sends for a page at this http(s) URI, or None."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def _validate_private_use_redirect_uri(uri: str) -> str:
    scheme, _, rest = uri.partition(":")
    if "#" in uri:
        raise ValidationError(
            gettext("%(uri)s: a redirect URI cannot contain a fragment (#).") % {"uri": uri},
            code="redirect_uri_fragment",
        )
    if not rest.startswith("/") or "@" in rest or "*" in rest:
        raise ValidationError(
            gettext(
                "%(uri)s: write a native app's redirect URI as %(scheme)s:/path (RFC 8252 §7.1), without user "
                "information or wildcards."
            )
            % {"uri": uri, "scheme": scheme},
            code="redirect_uri_invalid",
        )
    return uri


def validate_redirect_uri(uri: str) -> str:
    """One registered redirect URI: absolute, https unless loopback, no fragment, no userinfo.

    Native apps (RFC 8252) may also register a private-use scheme in reverse-domain form
    (`com.example.app:/callback`, §7.1) or a loopback IP literal (`http://127.0.0.1/cb`, §7.3).
    """
    if not uri or uri != uri.strip() or any(ch.isspace() for ch in uri):
        raise ValidationError(gettext("A redirect URI cannot be empty or contain spaces."), code="redirect_uri_space")
    if len(uri) > MAX_URI_LENGTH:
        raise ValidationError(
            gettext("A redirect URI can be at most %(max)s characters.") % {"max": MAX_URI_LENGTH},
            code="redirect_uri_length",
        )
    if not uri.isascii() or not uri.isprintable():
        raise ValidationError(
            gettext("%(uri)s: use percent-encoding for non-ASCII characters.") % {"uri": repr(uri)},
            code="redirect_uri_ascii",
        )
    if not URI_CHARACTERS.fullmatch(uri):
        raise ValidationError(
            gettext('%(uri)s contains characters a URI cannot hold (such as \\ < > " { }); percent-encode them.')
            % {"uri": repr(uri)},
            code="redirect_uri_invalid",
        )
    scheme = uri.partition(":")[0]
    if scheme not in ("http", "https") and ANY_SCHEME.fullmatch(scheme) and ":" in uri:
        if is_private_use_redirect(uri):
            return _validate_private_use_redirect_uri(uri)
        if scheme.lower() not in ("http", "https"):
            raise ValidationError(
                gettext(
                    "%(uri)s: a native app's custom URI scheme must be a reverse domain name you control, "
                    "such as com.example.app:/oauth/callback (RFC 8252 §7.1); “%(scheme)s” is not one "
                    "(it needs a dot and lowercase letters). Web apps use https."
                )
                % {"uri": uri, "scheme": scheme},
                code="redirect_uri_scheme",
            )
    try:
        parts = urlsplit(uri)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ValidationError(
            gettext("%(uri)s is not a valid URL.") % {"uri": uri}, code="redirect_uri_invalid"
        ) from None
    if "#" in uri:
        raise ValidationError(
            gettext("%(uri)s: a redirect URI cannot contain a fragment (#).") % {"uri": uri},
            code="redirect_uri_fragment",
        )
    if parts.scheme not in ("http", "https") or not host or "%" in host:
        raise ValidationError(
            gettext("%(uri)s must be an absolute http(s) URL with a host.") % {"uri": uri}, code="redirect_uri_invalid"
        )
    if parts.username is not None or parts.password is not None:
        raise ValidationError(
            gettext("%(uri)s: a redirect URI cannot contain user information.") % {"uri": uri},
            code="redirect_uri_userinfo",
        )
    if "*" in parts.netloc:
        raise ValidationError(
            gettext("%(uri)s: wildcards are not allowed.") % {"uri": uri}, code="redirect_uri_wildcard"
        )
    if parts.scheme == "http" and not is_loopback_host(host):
        raise ValidationError(
            gettext("%(uri)s must use https (plain http is allowed only for localhost, 127.0.0.1 and [::1]).")
            % {"uri": uri},
            code="redirect_uri_https",
        )
    return uri


def validate_redirect_uris(uris: list[str]) -> list[str]:
    """1 to 10 distinct, valid redirect URIs; every problem is reported."""
    uris = list(dict.fromkeys(uris))
    errors: list[ValidationError] = []
    if not uris:
        errors.append(ValidationError(gettext("Register at least one redirect URI."), code="redirect_uris_empty"))
    if len(uris) > MAX_REDIRECT_URIS:
        # Report the count alone: validating (and echoing) thousands of lines helps nobody.
        raise ValidationError(
            gettext("A client can have at most %(limit)s redirect URIs (got %(count)s).")
            % {"limit": MAX_REDIRECT_URIS, "count": len(uris)},
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


def resource_uri_problem(uri) -> str | None:
    """Why `uri` is no RFC 8707 resource indicator this server accepts, or None.

    An absolute https URI without userinfo, query or fragment (RFC 8707 §2: SHOULD NOT hold a
    query); http only on a loopback host, for services run on a developer's machine.
    """
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_LENGTH:
        return f"must be an absolute URI of at most {MAX_URI_LENGTH} characters"
    if any(ch.isspace() or ord(ch) < 32 or ch == "\x7f" for ch in uri):
        return "cannot contain spaces or control characters"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        return "is not a valid URI"
    if "#" in uri or "?" in uri:
        return "cannot have a query or a fragment"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "cannot hold a user name or password"
    if not parts.hostname:
        return "must be an absolute URI with a host"
    if parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(parts.hostname)):
        return None
    return "must use https (http only on localhost, 127.0.0.1 or [::1])"


def _resource_uri_sentences() -> dict[str, str]:
    """resource_uri_problem's words (English: the token endpoint's error_description) as whole
    sentences in the administrator's language, for the admin's form."""
    return {
        f"must be an absolute URI of at most {MAX_URI_LENGTH} characters": gettext(
            "The resource URI must be an absolute URI of at most %(limit)s characters."
        )
        % {"limit": MAX_URI_LENGTH},
        "cannot contain spaces or control characters": gettext(
            "The resource URI cannot contain spaces or control characters."
        ),
        "is not a valid URI": gettext("The resource URI is not a valid URI."),
        "cannot have a query or a fragment": gettext("The resource URI cannot have a query or a fragment."),
        "cannot hold a user name or password": gettext("The resource URI cannot hold a user name or password."),
        "must be an absolute URI with a host": gettext("The resource URI must be an absolute URI with a host."),
        "must use https (http only on localhost, 127.0.0.1 or [::1])": gettext(
            "The resource URI must use https (http only on localhost, 127.0.0.1 or [::1])."
        ),
    }


def validate_resource_uri(uri: str) -> str:
    problem = resource_uri_problem(uri)
    if problem:
        sentence = _resource_uri_sentences().get(problem) or f"The resource URI {problem}."
        raise ValidationError(sentence, code="invalid")
    return uri


def validate_scope_names(names: list[str]) -> list[str]:
    """At least one scope, all from the catalog."""
    try:
        parsed = parse_scopes(" ".join(names))
    except UnknownScopeError as exc:
        raise ValidationError(str(exc), code="scope_unknown") from None
    if not parsed:
        raise ValidationError(gettext("Select at least one scope."), code="scopes_empty")
    return parsed


# Logos: an upload is at most this many bytes and pixels, and is stored re-encoded as a PNG of at
# most LOGO_SIZE pixels a side, so that what users see is an image we produced, from this origin.
MAX_LOGO_BYTES = 256 * 1024
MAX_LOGO_PIXELS = 2048 * 2048
LOGO_SIZE = 128
LOGO_FORMATS = {"PNG", "JPEG", "GIF", "WEBP"}
# A progressive JPEG may split its data into any number of scans, and the decoder walks the whole
# image once per scan: 16,000 scans in 262 KB took Pillow 6 s. Encoders use about 10 (libjpeg's
# default script has 10), so more is refused before any decoding.
MAX_JPEG_SCANS = 16
# The decoding is fed in small pieces and stopped once it has taken this long: a second line of
# defence for whatever else makes a small file slow to decode.
LOGO_DECODE_SECONDS = 1.0
_FEED_BYTES = 4096
_JPEG_START_OF_SCAN = b"\xff\xda"
_FORMAT_ERROR = gettext_lazy("The logo must be a PNG, JPEG, GIF or WebP image.")


def _logo_decode(data: bytes, *, deadline: float):
    """Decode `data` piece by piece, refusing too many pixels before the pixels and stopping at `deadline`."""
    parser = ImageFile.Parser()
    try:
        for offset in range(0, len(data), _FEED_BYTES):
            parser.feed(data[offset : offset + _FEED_BYTES])
            image = parser.image
            if image is not None and image.size[0] * image.size[1] > MAX_LOGO_PIXELS:
                raise ValidationError(
                    gettext("The logo can be at most 2048 × 2048 pixels."), code="logo_too_many_pixels"
                )
            if time.monotonic() > deadline:
                raise ValidationError(
                    gettext(
                        "This image takes too long to decode. Save it as a PNG or a baseline (not progressive) JPEG."
                    ),
                    code="logo_too_slow",
                )
        return parser.close()
    finally:
        # close() again is harmless; it releases the decoder when we stopped early.
        with contextlib.suppress(Exception):
            parser.close()


def logo_reencode(data: bytes) -> bytes:
    """Check that `data` is a PNG, JPEG, GIF or WebP image within the limits; return it as a small PNG.

    Re-encoding keeps pixels only: no metadata, colour profile, text chunk, trailing bytes or other
    frame survives. The format, the pixel count and a JPEG's number of scans are checked before
    decoding, and the decoding itself runs under a time budget (LOGO_DECODE_SECONDS).
    """
    if not data:
        raise ValidationError(gettext("The logo file is empty."), code="logo_empty")
    if len(data) > MAX_LOGO_BYTES:
        raise ValidationError(
            gettext("The logo can be at most %(kilobytes)s KB.") % {"kilobytes": MAX_LOGO_BYTES // 1024},
            code="logo_too_large",
        )
    deadline = time.monotonic() + LOGO_DECODE_SECONDS
    try:
        with Image.open(io.BytesIO(data)) as header:  # reads the header only
            if header.format not in LOGO_FORMATS:
                raise ValidationError(_FORMAT_ERROR, code="logo_format")
            width, height = header.size
            if width * height > MAX_LOGO_PIXELS:
                raise ValidationError(
                    gettext("The logo can be at most 2048 × 2048 pixels."), code="logo_too_many_pixels"
                )
            # Every start-of-scan marker counts (an embedded thumbnail's too: that only errs on the safe side).
            if header.format == "JPEG" and data.count(_JPEG_START_OF_SCAN) > MAX_JPEG_SCANS:
                raise ValidationError(
                    gettext(
                        "This JPEG has more than %(scans)s progressive scans. Save it as a PNG or a "
                        "baseline (not progressive) JPEG."
                    )
                    % {"scans": MAX_JPEG_SCANS},
                    code="logo_too_many_scans",
                )
        image = _logo_decode(data, deadline=deadline)
        image = image.convert("RGBA")
        image.thumbnail((LOGO_SIZE, LOGO_SIZE))
        # A new image from the pixels alone: convert() and thumbnail() carry `info` (an ICC
        # profile, text, EXIF) over, and the PNG encoder would write it back out.
        pixels = Image.frombytes("RGBA", image.size, image.tobytes())
        out = io.BytesIO()
        pixels.save(out, format="PNG", optimize=True)
    except ValidationError:
        raise
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError, SyntaxError):
        raise ValidationError(_FORMAT_ERROR, code="logo_format") from None
    return out.getvalue()


# The optional links' names inside a sentence ("The privacy policy URL can be at most ...").
_LINK_NAMES = {
    "privacy policy": pgettext_lazy("a link's name inside a sentence", "privacy policy"),
    "terms of service": pgettext_lazy("a link's name inside a sentence", "terms of service"),
}


def _link_name(label: str) -> str:
    return _LINK_NAMES.get(label, label)


def validate_optional_url(value: str, *, label: str) -> str:
    """An optional http(s) link shown to users (privacy policy, terms): empty, or a URL of at most
    MAX_LINK_URL_LENGTH characters."""
    value = (value or "").strip()
    if not value:
        return ""
    if len(value) > MAX_LINK_URL_LENGTH or "\x00" in value:
        raise ValidationError(
            gettext("The %(link)s URL can be at most %(max)s characters.")
            % {"link": _link_name(label), "max": MAX_LINK_URL_LENGTH}
        )
    try:
        URLValidator(schemes=["http", "https"])(value)
    except ValidationError:
        raise ValidationError(gettext("Enter the %(link)s as an http(s) URL.") % {"link": _link_name(label)}) from None
    if has_bidi_control(value) or mixed_script_host(value):
        raise ValidationError(
            gettext(
                "The %(link)s address mixes alphabets in its host name or holds bidirectional control "
                "characters, as look-alike addresses do. Use the plain address."
            )
            % {"link": _link_name(label)}
        )
    return value


# --- Look-alikes: what a phishing app does to pass for another (SECURITY.md, "Review") ---

# Unicode's bidirectional controls (embeddings, overrides, isolates, marks): they reorder what a
# user reads ("ppA lufesU" shown as "Useful App"), so a name or URL holding one is refused.
BIDI_CONTROLS = frozenset("\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def has_bidi_control(value: str) -> bool:
    return any(ch in BIDI_CONTROLS for ch in value or "")


def has_line_break_or_control(value: str) -> bool:
    """CR, LF, other control characters or Unicode line/paragraph separators: not one line."""
    return any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in value or "")


# UTS #39 §5.1: Han, Hiragana, Katakana, Hangul and Bopomofo are "augmented" with the writing
# systems they belong to, so that Japanese (Han + kana) or Korean (Hangul + Han) is one script.
_AUGMENTED_SCRIPTS = {
    "Hani": {"Hani", "Hanb", "Jpan", "Kore"},
    "Hira": {"Hira", "Jpan"},
    "Kana": {"Kana", "Jpan"},
    "Hang": {"Hang", "Kore"},
    "Bopo": {"Bopo", "Hanb"},
}
# Common (digits, punctuation, spaces) and Inherited (combining marks) go with any script.
_ANY_SCRIPT = ("Zyyy", "Zinh")


def _scripts(ch: str) -> set[str] | None:
    """The augmented Script_Extensions of a character (UTS #39 §5.1); None for "any script"."""
    names = {icu.Script(code).getShortName() for code in icu.Script.getScriptExtensions(ch)}
    if not names or names & set(_ANY_SCRIPT):
        return None
    return set().union(*(_AUGMENTED_SCRIPTS.get(name, {name}) for name in names))


def mixed_script(word: str) -> bool:
    """A word or host label whose characters share no script (UTS #39 §5.1, its resolved script set
    is empty): `раураl` (Cyrillic with a Latin l), `Gοοgle` (Greek omicrons). Japanese, which mixes
    Han and kana, is one script."""
    resolved: set[str] | None = None
    for ch in word:
        scripts = _scripts(ch)
        if scripts is None:
            continue
        resolved = scripts if resolved is None else resolved & scripts
        if not resolved:
            return True
    return False


# --- Names: compared as users read them (UTS #39 confusable skeletons) ---

# Characters shown as nothing (or as a blank) that a string still counts: Unicode's
# Default_Ignorable_Code_Point set (zero-width spaces and joiners, variation selectors, the Hangul
# fillers U+115F, U+1160, U+3164 and U+FFA0 …), plus the Braille blank, which is a "letter" drawn
# as a space. A name holding one reads like another name it is not: refused at registration.
_BLANK_LOOKING = frozenset("\u2800")


def _invisible(ch: str) -> bool:
    return ch in _BLANK_LOOKING or icu.Char.hasBinaryProperty(ch, icu.UProperty.DEFAULT_IGNORABLE_CODE_POINT)


def invisible_characters(value: str) -> list[str]:
    """The default-ignorable and filler characters in `value`, as U+XXXX, in order, once each."""
    return [f"U+{ord(ch):04X}" for ch in dict.fromkeys(value or "") if _invisible(ch)]


_spoof_checker = None
NAME_SKELETON_LENGTH = 300


def name_skeleton(name: str) -> str:
    """The key two names share when users would read them alike: UTS #39's confusable skeleton
    (ICU's SpoofChecker, through PyICU: `Gооgle` with Cyrillic o's and `G00gle` both become
    `Google`), taken after case and width are folded, with invisible characters, accents, spaces
    and punctuation ignored. Stored on each client (OAuthClient.name_skeleton, indexed), so that
    "is this named like a verified app?" is one lookup.

    Why ICU: its SpoofChecker is the reference implementation of UTS #39, from Unicode's own
    confusables data; the pure-Python packages on PyPI either only detect mixed scripts
    (confusable-homoglyphs) or implement their own, unmaintained mapping (confusables, homoglyphs).
    The skeleton changes with ICU's Unicode version: `manage.py oauthclient name-skeletons` stores
    them again after an ICU upgrade (docs/deploying.md).
    """
    global _spoof_checker
    if _spoof_checker is None:
        _spoof_checker = icu.SpoofChecker()
    folded = unicodedata.normalize("NFKC", name or "").casefold()
    # Invisible characters first: ICU maps U+3164 HANGUL FILLER to U+1160, a letter to isalnum().
    visible = "".join(ch for ch in folded if not _invisible(ch))
    # The skeleton's prototypes may be capitals (`0` becomes `O`): fold again, then drop accents.
    skeleton = unicodedata.normalize("NFKD", _spoof_checker.getSkeleton(0, visible).casefold())
    # Bounded for its indexed column: NFKC can make one character eighteen (U+FDFA). Two names
    # alike in their first 300 are alike enough to flag.
    return "".join(ch for ch in skeleton if ch.isalnum())[:NAME_SKELETON_LENGTH]


def mixed_script_words(name: str) -> list[str]:
    """The words of a name that mix scripts: flagged to the reviewer, and on an unverified app's
    consent page, where no reviewer has looked."""
    return [word for word in (name or "").split() if mixed_script(word)]


def url_host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def mixed_script_host(url: str) -> bool:
    """A host with a label that mixes scripts: refused, as no honest domain needs it."""
    return any(mixed_script(label) for label in url_host(url).split("."))


@dataclass(frozen=True)
class LookalikeFlag:
    field: str
    text: str


def lookalike_flags(*, name: str, urls: dict[str, str]) -> list[LookalikeFlag]:
    """What a reviewer should look at twice: mixed-script words in the name, non-ASCII hosts (shown in
    the punycode a browser's address bar may show instead), bidirectional controls anywhere."""
    flags = []
    if has_bidi_control(name):
        flags.append(LookalikeFlag("name", "The name holds bidirectional control characters."))
    mixed = mixed_script_words(name)
    if mixed:
        flags.append(LookalikeFlag("name", "The name mixes alphabets in " + ", ".join(mixed) + " (a look-alike?)."))
    for label, url in urls.items():
        host = url_host(url)
        if host and not host.isascii():
            try:
                ascii_host = host.encode("idna").decode("ascii")
            except UnicodeError:
                ascii_host = "(not a valid internationalised name)"
            flags.append(LookalikeFlag(label, f"The {label} host {host} is internationalised: {ascii_host}."))
        if has_bidi_control(url):
            flags.append(LookalikeFlag(label, f"The {label} holds bidirectional control characters."))
    return flags
