"""Which kind of path a request is for: one answer for every middleware that asks.

Machine paths serve apps, resource servers and a page's subresources, never a page a person
reads: the token, revocation, introspection, userinfo and status-list endpoints and the /v2 API,
the metadata documents, static files and client logos. Middleware that works for people (allauth's,
accounts.middleware; the language of the page, accounts.languages) lets them straight through, so
that their cost per request stays what the bench measures (docs/performance.md).
"""

MACHINE_PATH_PREFIXES = ("/v2/", "/.well-known/", "/static/", "/logos/")


def is_machine_path(path: str) -> bool:
    return path.startswith(MACHINE_PATH_PREFIXES)
