"""Passkeys (WebAuthn, through allauth.mfa): which origin a ceremony may come from, and the name a
new passkey gets.

The origin: a WebAuthn ceremony's client data names the page that ran it (WebAuthn §7.1 step 9,
§7.2 step 13). allauth's relying party server (`allauth.mfa.webauthn.internal.auth.get_server`)
either keeps fido2's check (https, the relying party's host or any subdomain, any port) or, with
MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN, accepts any origin at all; an earlier setting here turned that
on for every issuer *starting with* `http://localhost` or `http://127.0.0.1`, and a signed
assertion naming `http://evil.example` then signed in. Here one origin is accepted, exactly:
OAUTH_ISSUER's (scheme, host and port compared whole; `make run`'s `http://localhost:PORT`, which
browsers allow WebAuthn on, included). `passkey_server` replaces allauth's `get_server` at start-up
(accounts.apps), so that every ceremony — adding, a second step, passwordless, a confirmation —
goes through it; the private function is pinned in tests/accounts/test_allauth_internals.py.
"""

from urllib.parse import urlsplit

from allauth.mfa.adapter import get_adapter
from django.conf import settings
from django.utils.translation import gettext
from fido2.server import Fido2Server
from fido2.webauthn import PublicKeyCredentialRpEntity

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, the default port made explicit; None otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host or parts.username is not None or parts.password is not None:
        return None
    return scheme, host, port if port is not None else _DEFAULT_PORTS[scheme]


def passkey_origin_allowed(origin: str) -> bool:
    """Whether a WebAuthn ceremony's client data origin is OAUTH_ISSUER's origin, exactly."""
    if not isinstance(origin, str) or urlsplit(origin).path not in ("", "/"):
        return False
    expected = _origin(settings.OAUTH_ISSUER)
    return expected is not None and _origin(origin) == expected


def passkey_server() -> Fido2Server:
    """allauth's relying party server, with our origin rule (replaces its get_server; see above)."""
    rp = PublicKeyCredentialRpEntity(**get_adapter().get_public_key_credential_rp_entity())
    return Fido2Server(rp, verify_origin=passkey_origin_allowed)


# --- the default name of a new passkey: the device it was added on ----------------------------------

# (substring of the User-Agent, what to call it): the first that matches wins, so the more
# specific come first (Edge's and Opera's strings contain "Chrome", Chrome's contains "Safari";
# an iPad may say "Macintosh", and is then a Mac to us as to the person reading it).
_BROWSERS = (
    ("Edg/", "Edge"),
    ("OPR/", "Opera"),
    ("SamsungBrowser/", "Samsung Internet"),
    ("Firefox/", "Firefox"),
    ("FxiOS/", "Firefox"),
    ("CriOS/", "Chrome"),
    ("Chrome/", "Chrome"),
    ("Chromium/", "Chromium"),
    ("Safari/", "Safari"),
)
_DEVICES = (
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Android", "Android"),
    ("Windows", "Windows"),
    ("CrOS", "ChromeOS"),
    ("Macintosh", "Mac"),
    ("Mac OS X", "Mac"),
    ("Linux", "Linux"),
)


def _first(user_agent: str, table) -> str:
    return next((name for needle, name in table if needle in user_agent), "")


def passkey_default_name(*, user_agent: str, taken: set[str]) -> str:
    """A name for a new passkey after the device it is added on ("Chrome on Android"), unlike the
    names already `taken`; "Passkey" when the browser says nothing we know."""
    user_agent = user_agent or ""
    browser, device = _first(user_agent, _BROWSERS), _first(user_agent, _DEVICES)
    if browser and device:
        name = gettext("%(browser)s on %(device)s") % {"browser": browser, "device": device}
    else:
        name = device or browser or gettext("Passkey")
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name} ({number})"
    return candidate
