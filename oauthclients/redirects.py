"""Whose redirect URIs a browser may be sent to without a page of ours in between.

Anyone can register a client (RFC 7591, or a client ID metadata document) with any https redirect
URI, `https://evil.example/phish` included: a self-registered client's URIs are trusted by nobody.
RFC 9700 §4.11.2: an authorization server must not redirect automatically to such a URI, or it is
an open redirector that lends its own address to phishing links. So, for every door that would
send the browser to a client's URI (an authorization error or code, `prompt=none`, RP-initiated
logout), one rule:

- an approved client: yes (RFC 6749 §4.1.2.1, OpenID Connect Core §3.1.2.6 and RP-Initiated
  Logout §3: its URIs were reviewed with it, and an edit of them sends it back to review);
- a pending client: only for its signed-in owner, who registered those URIs and tests the client
  end to end (the authorization request lets nobody else reach it);
- an unverified (self-registered) client: only once the user has been shown its consent page in
  this authorization request (the Allow and Deny POSTs, oauthflows.pages.consentshown); never at logout,
  which has no consent page;
- anything else (rejected, deleted): no.

Refused, the door shows a 400 page (a page at logout) that names the app as unverified and gives
the redirect host as text, not a link. The rule is oauthclients.policy's REDIRECT door.
"""

from urllib.parse import urlsplit

from django.utils.translation import gettext

from oauthclients.models import OAuthClient
from oauthclients.policy import Door, client_may_act
from oauthclients.validators import is_private_use_redirect


def redirect_trusted(*, client: OAuthClient, user, consent_shown: bool = False) -> bool:
    """Whether the browser of `user` may be sent to one of `client`'s registered URIs now."""
    return client_may_act(client, user, Door.REDIRECT, consent_shown=consent_shown)


def redirect_host(uri: str) -> str:
    """The host a URI sends the browser to, as text for a page (a private-use scheme names the app)."""
    if is_private_use_redirect(uri):
        return uri.partition(":")[0]
    try:
        return urlsplit(uri).netloc
    except ValueError:
        return ""


def redirect_refusal(*, client: OAuthClient, user, uri: str, consent_shown: bool = False) -> str | None:
    """Why the browser is not sent to `uri` (the page's text), or None when it may be."""
    if redirect_trusted(client=client, user=user, consent_shown=consent_shown):
        return None
    if client.is_unverified:
        return gettext(
            "“%(name)s” is an unverified application: it registered itself and this service's "
            "administrators have not reviewed it, so you are not sent on to its address (%(host)s) from here."
        ) % {"name": client.name, "host": redirect_host(uri)}
    # A pending client's name was never approved: not shown to anyone but its owner.
    return gettext(
        "This application has not been reviewed by this service's administrators, so you are not "
        "sent on to its address (%(host)s) from here."
    ) % {"host": redirect_host(uri)}
