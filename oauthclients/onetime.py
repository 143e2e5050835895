"""A new secret shown exactly once, after a redirect (post/redirect/get), and stored nowhere.

The POST that creates a client or a secret answers 303 with the plaintext in a short-lived cookie,
encrypted under a key derived from SECRET_KEY, scoped to that client's page, HttpOnly and
SameSite=Strict. The GET that follows reads it, deletes it in the same response and renders it
with no-store. A reload finds no cookie: nothing is created again and nothing is shown again.
The plaintext never reaches the session, the database, `messages` or a URL (STYLE.md 8).

The cookie is also bound to the browser's session and good for one read: the POST puts a random
nonce in the (server-side) session and in the encrypted cookie; the GET shows the secret only if
the session still holds that nonce, and removes it. A copy of the cookie replayed later, after a
logout and a new login, or from another session, shows nothing.
"""

import base64
import hashlib
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.urls import reverse

COOKIE_NAME = "new_secret_once"
# Long enough for the redirect, short enough that an unfollowed one does not linger.
MAX_AGE_SECONDS = 120


def _fernet() -> Fernet:
    key = hashlib.sha256(b"oauthclients.onetime:" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def _path(client_id: str) -> str:
    return reverse("developer:client_detail", args=[client_id])


def _session_key(client_id: str) -> str:
    return f"oauthclients.onetime:{client_id}"


def secret_handoff_set(response, *, request, client_id: str, plaintext: str) -> None:
    """Attach the plaintext to a redirect to the client's page, for that page's next GET only."""
    nonce = secrets.token_urlsafe(16)
    request.session[_session_key(client_id)] = nonce  # a nonce, never the secret
    token = _fernet().encrypt(f"{client_id}\n{nonce}\n{plaintext}".encode()).decode()
    response.set_cookie(
        COOKIE_NAME,
        token,
        max_age=MAX_AGE_SECONDS,
        path=_path(client_id),
        secure=request.is_secure(),
        httponly=True,
        samesite="Strict",
    )


def secret_handoff_read(request, *, client_id: str) -> str | None:
    """The plaintext handed to this client's page in this session, once (the caller then clears the cookie)."""
    token = request.COOKIES.get(COOKIE_NAME)
    if token is None:
        return None
    try:
        value = _fernet().decrypt(token.encode(), ttl=MAX_AGE_SECONDS).decode()
    except (InvalidToken, UnicodeDecodeError):
        return None
    owner_client_id, nonce, plaintext = (value.split("\n", 2) + ["", ""])[:3]
    if owner_client_id != client_id or not nonce or not plaintext:
        return None
    # Consumed on the first read, whatever it finds: the nonce works once, in this session only.
    expected = request.session.pop(_session_key(client_id), None)
    if not isinstance(expected, str) or not hmac.compare_digest(expected, nonce):
        return None
    return plaintext


def secret_handoff_clear(request, response, *, client_id: str) -> None:
    """Delete the cookie in this response: one display, then never again."""
    if COOKIE_NAME in request.COOKIES:
        response.delete_cookie(COOKIE_NAME, path=_path(client_id), samesite="Strict")
