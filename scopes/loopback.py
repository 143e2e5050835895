"""Which hosts are this machine's, where plain http is allowed: one list for every door that asks.

A redirect URI or resource indicator of a developer's app (oauthclients.validators), a client ID
metadata document fetched in development (oauthflows.registration.cimd) and the JWKS and status
lists a resource server fetches (scopes.jwt) all ask `is_loopback_host`. Compared by host name
as `urllib.parse.urlsplit(url).hostname` gives it — lower case, an IPv6 address without its
brackets, without user information or port — never by the URL's `netloc`, where `[::1]`,
`LOCALHOST`, a port or `user@` would each make another answer
(tests/test_each_constant_in_one_place.py asks every door).
"""

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback_host(hostname: str | None) -> bool:
    """Whether `hostname` (a URL's `.hostname`) names this machine."""
    return hostname in LOOPBACK_HOSTS
