"""Keep credentials out of log records (SECURITY.md, "Storage and logs"; STYLE.md 8).

Some secrets travel in a URL's path rather than its query: allauth's password reset link
(/accounts/password/reset/key/<uid>-<key>/) and email confirmation link (/accounts/confirm-email/<key>/).
Wherever a path is written — the access line's path field and message, Django's "Not Found: <path>",
a rate-limit warning, a trace's URL attributes (operations.tracing) — path_redacted() replaces the
key. tests/security/test_log_hygiene.py walks every URL pattern so that a new route with a secret
in its path cannot be added without it.

oauthlib logs plaintext credentials at DEBUG: the new authorization code ("Created authorization
code grant {'code': ...}", "Saving grant {'code': ...}"), the presented refresh token ("Validating
refresh token %s", "Invalid refresh token, %s"), and the new token pair ("Issuing new token to
client id %r (%r), {'access_token': ..., 'refresh_token': ...}"). `OAUTH_LOG_LEVEL=DEBUG` would
write them out. RedactCredentials rewrites such records; RedactInPlaceHandler carries it on a
library's top logger, where it sees the records of all the library's modules before they
propagate to the real handlers (a filter on a logger would see only that logger's own records).
"""

import functools
import logging
import re
from collections.abc import Mapping

from plumbing.requestparams import CREDENTIAL_PARAMS

REDACTED = "[redacted]"

# Names that carry a credential: every request parameter that does (plumbing.requestparams), and
# the fields of answers and cookies that do (RFC 6749 §5.1, OpenID Connect, RFC 8628, RFC 7521, Django).
# In lower case: each check below lowers the name it tests.
CREDENTIAL_KEYS = frozenset(
    {*CREDENTIAL_PARAMS, "access_token", "id_token", "device_code", "assertion", "sessionid", "csrftoken"}
)
# A placeholder right after one of these words is a credential: "refresh token %s", "token, %s".
_CREDENTIAL_BEFORE = re.compile(r"(?:token|code|secret|verifier|password)[\s,:=]{0,3}$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"%(?:\((?P<name>[^)]*)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?P<type>[diouxXeEfFgGcrsa%])")
# The net for what slips through inside a repr: code=..., 'refresh_token': '...', "client_secret": "...".
_KEYS = "|".join(sorted(CREDENTIAL_KEYS, key=len, reverse=True))
_NOT_REDACTED = re.escape(REDACTED)
_KEY_VALUE = re.compile(
    rf"""(?P<key>\b(?:{_KEYS})\b\\?['"]?\s*[:=]\s*\\?['"]?)(?!{_NOT_REDACTED})(?P<value>[^'"\\\s&,;)}}\]]+)""",
    re.IGNORECASE,
)
# Whole header values, scheme included: oauthlib's debug repr of a request shows request.META.
# (Quotes may come escaped, as in the repr of an exception that holds such a repr.)
_HEADER_VALUE = re.compile(
    rf"""(?P<key>\b(?:HTTP_)?(?:AUTHORIZATION|COOKIE)\b\\?['"]?\s*[:=]\s*\\?['"]?)(?!{_NOT_REDACTED})(?P<value>[^'"\\\n]+)""",
    re.IGNORECASE,
)


def _scrub(value, depth: int = 0):
    """A copy of `value` with the values of credential keys replaced (the original is untouched)."""
    if depth > 5:
        return value
    if isinstance(value, Mapping):
        return {
            key: REDACTED if str(key).lower() in CREDENTIAL_KEYS else _scrub(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_scrub(item, depth + 1) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub(item, depth + 1) for item in value)
    return value


# A record's own attributes; anything else on it came from `extra` (the access line's fields) and is
# written out as its own field by a structured formatter (operations.logs.JsonLines).
_RECORD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


# Cheap tests for whether each pattern can match, so that a line with no credential in it (most
# lines: the access line's "status=200 endpoint=token ...") costs no scan with a long alternation.
# Exact for ASCII text, where IGNORECASE is lower(); other text gets both scans, as before.
# _KEY_VALUE needs a credential key as a whole word before a ':' or '=': every such word is found
# here whole (a \w run, followed by what _KEY_VALUE allows between the key and its separator).
_WORD_BEFORE_SEPARATOR = re.compile(r"""\b(\w++)\\?['"]?\s*[:=]""")


def _redact_matches(match: re.Match) -> str:
    return match.group("key") + REDACTED


# A secret in a URL's path: the segment after one of these (allauth's account URLs). The reset key keeps
# its non-secret user id (`<uid>-`); allauth's own redirect after opening the link, `<uid>-set-password/`
# (the key then lives in the session), and `done/` are not secrets and stay readable.
SECRET_PATH_MARKERS = ("/password/reset/key/", "/confirm-email/")
_SECRET_PATH = re.compile(
    r"(?P<key>/password/reset/key/(?>(?:[0-9A-Za-z]+-)?)|/confirm-email/)"
    rf"(?!(?:set-password|done|{re.escape(REDACTED)})(?:/|$|[\\\s'\"?#&;,)>]))(?P<value>[^/\\\s'\"?#&;,)>]+)"
)


def path_redacted(text: str) -> str:
    """`text` with every secret carried in a URL path (SECRET_PATH_MARKERS) replaced."""
    if not any(marker in text for marker in SECRET_PATH_MARKERS):
        return text
    return _SECRET_PATH.sub(_redact_matches, text)


def _cleaned(text: str) -> str:
    text = path_redacted(text)
    if "=" not in text and ":" not in text:  # both patterns need one after the key: most fields have neither
        return text
    if not text.isascii():
        for pattern in (_HEADER_VALUE, _KEY_VALUE):
            text = pattern.sub(_redact_matches, text)
        return text
    lowered = text.lower()
    if "authorization" in lowered or "cookie" in lowered:
        text = _HEADER_VALUE.sub(_redact_matches, text)
    if any(word.lower() in CREDENTIAL_KEYS for word in _WORD_BEFORE_SEPARATOR.findall(text)):
        text = _KEY_VALUE.sub(_redact_matches, text)
    return text


@functools.lru_cache(maxsize=512)
def _positional_credentials(template: str) -> frozenset[int]:
    """Indexes of the %-placeholders that follow a credential word in the message template."""
    found, index, start = set(), 0, 0
    for match in _PLACEHOLDER.finditer(template):
        if match.group("type") == "%":
            continue
        if _CREDENTIAL_BEFORE.search(template[start : match.start()]):
            found.add(index)
        index += 1
        start = match.end()
    return frozenset(found)


class RedactCredentials(logging.Filter):
    """Rewrites a record's arguments (and, as a last resort, its message); never drops it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            self._redact(record)
        except Exception:  # a log line must never break the request that wrote it
            record.msg, record.args = "(log message withheld: it could not be checked for credentials)", ()
        return True

    def _redact(self, record: logging.LogRecord) -> None:
        template = str(record.msg)
        if isinstance(record.args, Mapping):
            record.args = _scrub(record.args)
        elif record.args:
            positions = _positional_credentials(template)
            record.args = tuple(
                REDACTED if index in positions else _scrub(arg) for index, arg in enumerate(record.args)
            )
        message = record.getMessage()
        cleaned = _cleaned(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        # The extra fields, which JSON lines write beside the message: the same rules as for its text.
        for key in record.__dict__.keys() - _RECORD_ATTRIBUTES:
            value = record.__dict__[key]
            if key.lower() in CREDENTIAL_KEYS:
                record.__dict__[key] = REDACTED
            elif isinstance(value, str):
                record.__dict__[key] = _cleaned(value)
            elif isinstance(value, Mapping | list | tuple):
                record.__dict__[key] = _scrub(value)


class RedactInPlaceHandler(logging.Handler):
    """Writes nothing: its filters rewrite the records that pass through it, before they go on up."""

    def __init__(self, level=logging.NOTSET):
        super().__init__(level)
        self.addFilter(RedactCredentials())

    def emit(self, record: logging.LogRecord) -> None:
        pass
