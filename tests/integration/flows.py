"""The OAuth flows over real HTTP against a live server, as a browser and a third-party app would.

The browser is a `requests.Session` (cookies, CSRF token from the page); every app call opens its
own connection (no session), so that concurrent calls are really concurrent.
"""

import functools
import re
import threading
from urllib.parse import parse_qs, urlencode, urlsplit

import requests
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tests.factories import PASSWORD, make_user
from tests.oauthflows.helpers import consent_form

TIMEOUT = 15
TOKEN = "/v2/auth/oauth2/token"
CSRF_FIELD_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def make_server_user(username: str, **extra):
    """A user the server can log in: its password hashed with a hasher the production settings know.

    The test settings hash with MD5 for speed, which the server (production settings) cannot read.
    """
    user = make_user(username, **extra)
    user.password = _server_password_hash()
    user.save(update_fields=["password"])
    return user


@functools.cache
def _server_password_hash() -> str:
    # Hashed once per run: PBKDF2 at Django's default cost takes about half a second.
    hasher = PBKDF2PasswordHasher()
    return hasher.encode(PASSWORD, hasher.salt())


def _csrf_token(page: requests.Response) -> str:
    match = CSRF_FIELD_RE.search(page.text)
    assert match, f"no CSRF field in {page.url} ({page.status_code})"
    return match.group(1)


def form_post(browser: requests.Session, base_url: str, path: str, token: str, **data) -> requests.Response:
    """POST a form like the browser does: CSRF field plus the same-origin Origin and Referer."""
    return browser.post(
        base_url + path,
        data={"csrfmiddlewaretoken": token, **data},
        headers={"Origin": base_url, "Referer": base_url + path},
        allow_redirects=False,
        timeout=TIMEOUT,
    )


def login(base_url: str, username: str, password: str = PASSWORD) -> requests.Session:
    browser = requests.Session()
    page = browser.get(base_url + "/accounts/login/", timeout=TIMEOUT)
    response = form_post(browser, base_url, "/accounts/login/", _csrf_token(page), username=username, password=password)
    assert response.status_code == 302, (response.status_code, response.text[:300])
    return browser


def authorize(
    browser: requests.Session, base_url: str, client, *, scope: str = "PROFILE_READ", resource: str | None = None
) -> str:
    """Show the consent page, click Allow, and return the code from the redirect."""
    # prompt=consent: the page every time, even for a user who granted these scopes before.
    params = {
        "client_id": client.client_id,
        "redirect_uri": client.redirect_uri_list[0],
        "scope": scope,
        "state": "s",
        "prompt": "consent",
    }
    query = urlencode(params | ({"resource": resource} if resource else {}))
    page = browser.get(f"{base_url}/auth/oauth2/authorize?{query}", timeout=TIMEOUT)
    assert page.status_code == 200, (page.status_code, page.text[:300])
    # The consent page's mark that it was shown, if it has one (an unverified client's).
    response = form_post(
        browser, base_url, f"/auth/oauth2/authorize/allow?{query}", _csrf_token(page), **consent_form(page.text)
    )
    assert response.status_code == 302, (response.status_code, response.text[:300])
    return parse_qs(urlsplit(response.headers["Location"]).query)["code"][0]


def exchange(base_url: str, client, secret: str, code: str, *, headers: dict | None = None) -> requests.Response:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": client.redirect_uri_list[0],
        "client_id": client.client_id,
        "client_secret": secret,
    }
    return requests.post(base_url + TOKEN, data=data, headers=headers, timeout=TIMEOUT)


def refresh(
    base_url: str, client_id: str, secret: str, refresh_token: str, *, headers: dict | None = None
) -> requests.Response:
    data = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": client_id,
        "client_secret": secret,
    }
    return requests.post(base_url + TOKEN, data=data, headers=headers, timeout=TIMEOUT)


def me(base_url: str, access_token: str) -> requests.Response:
    return requests.get(base_url + "/v2/me", headers={"Authorization": f"Bearer {access_token}"}, timeout=TIMEOUT)


def all_at_once(count: int, call) -> list:
    """call(index) in `count` threads released together by a barrier; each one's result or exception."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = call(index)
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            results[index] = exc

    threads = [threading.Thread(target=worker, args=(index,), daemon=True) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=TIMEOUT * 2)
    assert not any(thread.is_alive() for thread in threads), "a request never finished"
    return results


def statuses(responses) -> list:
    """Each response's status, or the exception its request raised; sorted for comparison."""
    return sorted((r.status_code if hasattr(r, "status_code") else repr(r) for r in responses), key=str)


def error_codes(responses) -> set[str]:
    return {r.json()["error"] for r in responses if r.status_code != 200}


def winner(responses) -> dict:
    return next(r.json() for r in responses if r.status_code == 200)
