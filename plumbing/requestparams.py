"""Reading what a client sends to the token, revocation and introspection endpoints.

One reader for the endpoints, the oauthlib backend and the rate limiter (plumbing/ratelimit.py),
so they agree on what a body and an HTTP Basic header say. No model imports: the limiter
middleware loads this.
"""

import base64
import binascii
import json
import re
from urllib.parse import unquote_plus

# The request parameters that carry a credential (RFC 6749 §2.3.1, §4.1.3, §6 and the password
# grant's; RFC 7636 §4.5; RFC 7009 and 7662's `token`; RFC 8693 §2.1). The one list the endpoints
# refuse in a URL and keep out of error reports, and plumbing.logfilters keeps out of the logs.
CREDENTIAL_PARAMS = (
    "client_secret",
    "code",
    "code_verifier",
    "refresh_token",
    "token",
    "password",
    "subject_token",
    "actor_token",
    "assertion",  # RFC 7523: an ID-JAG (oauthflows.token.idjag) is a credential too
)


class BodyError(ValueError):
    """A request body the token endpoint cannot read."""


# JSON's \uXXXX escapes can spell a lone UTF-16 surrogate (RFC 8259 §8.2 allows it), which is
# no Unicode scalar value: no UTF-8 encoder takes it (oauthlib's urlencode, PostgreSQL, the
# templates all raise), so it is refused where a body is read, once for every field. Form bodies
# and query strings cannot carry one: Django decodes their UTF-8 with replacement characters.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
NOT_UNICODE = "The request holds a lone UTF-16 surrogate (U+D800 to U+DFFF), which is not a Unicode character."


def unicode_scalars_only(value) -> bool:
    """Whether every string in a parsed JSON value (object keys included) is Unicode scalar values.
    Iterative: a value as deep as the JSON decoder allows cannot exhaust the stack here."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


# Parameters that may repeat (RFC 8707 §2: `resource`); in JSON, an array of strings.
REPEATABLE_PARAMS = frozenset({"resource"})


def json_body_pairs(raw: bytes) -> list[tuple[str, str]]:
    """A JSON object of string (or number) values, as form-like pairs (an array of strings for a
    repeatable parameter: one pair per element)."""
    try:
        data = json.loads(raw.decode("utf-8") or "null")
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BodyError("The request body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise BodyError("The JSON request body must be an object.")
    if not unicode_scalars_only(data):
        raise BodyError(NOT_UNICODE)
    pairs = []
    for key, value in data.items():
        if key in REPEATABLE_PARAMS and isinstance(value, list) and all(isinstance(item, str) for item in value):
            pairs.extend((key, item) for item in value)
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise BodyError(f"The JSON field {key!r} must be a string.")
        pairs.append((key, str(value)))
    return pairs


def request_json_pairs(request) -> list[tuple[str, str]]:
    """json_body_pairs of a Django request's body, parsed once per request (or BodyError)."""
    cached = getattr(request, "_json_body_pairs", None)
    if cached is None:
        try:
            cached = json_body_pairs(request.body)
        except BodyError as exc:
            cached = exc
        request._json_body_pairs = cached
    if isinstance(cached, BodyError):
        raise cached
    return cached


def basic_credentials(auth_string: str) -> tuple[str, str] | None:
    """RFC 6749 §2.3.1: base64 of form-urlencoded client_id ":" client_secret."""
    try:
        decoded = base64.b64decode(auth_string, validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    if ":" not in decoded:
        return None
    client_id, client_secret = (unquote_plus(part) for part in decoded.split(":", 1))
    if "\x00" in client_id or "\x00" in client_secret:
        return None  # no client has such an id (PostgreSQL could not even look it up): malformed
    return client_id, client_secret
