"""Proof, on the Allow and Deny POSTs, that this user was shown the consent page for this very
authorization request (oauthclients.redirects: what lets an unverified client's redirect happen).

The consent page carries a mark signed with SECRET_KEY under a salt bound to the session and the
user, over a digest of the request's query string; the POSTs go to URLs carrying that same query.
A mark from another session, another user, another request or older than CONSENT_PAGE_MAX_AGE is
no proof. Nothing is written: the consent page stays a read.
"""

import hashlib
import hmac

from django.core import signing

CONSENT_PAGE_MAX_AGE = 3600  # seconds a consent page may stay open before its answer
FIELD = "consent_shown"
_MAX_MARK_LENGTH = 200


def _salt(request) -> str:
    # The session key is in the salt (part of the HMAC key), never in the page.
    return f"oauthflows.pages.consentshown:{request.session.session_key}:{request.user.pk}"


def _query_digest(request) -> str:
    return hashlib.sha256(request.META.get("QUERY_STRING", "").encode("utf-8", "surrogateescape")).hexdigest()[:32]


def consent_shown_mark(request) -> str:
    """The hidden field's value on the consent page rendered for this request."""
    return signing.dumps(_query_digest(request), salt=_salt(request))


def consent_was_shown(request) -> bool:
    """Whether this POST answers a consent page shown to this user, in this session, for this request."""
    mark = request.POST.get(FIELD, "")
    if not mark or len(mark) > _MAX_MARK_LENGTH or not mark.isascii() or request.session.session_key is None:
        return False
    try:
        shown_for = signing.loads(mark, salt=_salt(request), max_age=CONSENT_PAGE_MAX_AGE)
    except signing.BadSignature:
        return False
    return isinstance(shown_for, str) and hmac.compare_digest(shown_for, _query_digest(request))
