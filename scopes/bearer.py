"""The bearer token of a request's Authorization header (RFC 6750 §2.1): one reading for every door.

DRF's bearer authentication (scopes.authentication), OpenID Connect's userinfo, RFC 7592's
registration management, the metrics endpoint and the example services read the header here, so
that a token one door takes no other door refuses for its form (tests/scopes/test_bearer_header.py
fails if a copy appears elsewhere). The scheme is case-insensitive (RFC 9110 §11.1); the token
is one run of printable ASCII without spaces, at most MAX_TOKEN_LENGTH characters: longer is
refused unread, before any digest, parse or lookup.
"""

# The longest token any door takes, and the longest this house issues: an opaque token is 43
# characters; a JWT access token (RFC 9068) with every scope and a resource URI of the longest
# registrable length (2,000 characters) some 5,400, which 4,096 would refuse; signing.jwtokens
# refuses to sign one longer than this, so that every token issued is taken by every door
# (tests/test_each_constant_in_one_place.py).
MAX_TOKEN_LENGTH = 8192

SCHEME = "bearer"


class MalformedBearer(ValueError):
    """The header names the Bearer scheme but carries no token of a form this house issues."""


def bearer_token(header: str | bytes | None) -> str | None:
    """The token of `Authorization: Bearer <token>`; None without the header or with another scheme.

    Raises MalformedBearer for the Bearer scheme with no token, more than one, characters outside
    printable ASCII, or more than MAX_TOKEN_LENGTH characters."""
    if not header:
        return None
    if isinstance(header, bytes):
        header = header.decode("latin-1")  # as WSGI hands headers over (PEP 3333)
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != SCHEME:
        return None
    token = token.strip(" \t")
    if not token:
        raise MalformedBearer("no token")
    if len(token) > MAX_TOKEN_LENGTH:
        raise MalformedBearer("too long")
    if not token.isascii() or not token.isprintable() or " " in token:
        raise MalformedBearer("not one token of printable ASCII")
    return token


def request_bearer_token(request) -> str | None:
    """bearer_token of a Django (or DRF) request's Authorization header."""
    return bearer_token(request.META.get("HTTP_AUTHORIZATION"))
