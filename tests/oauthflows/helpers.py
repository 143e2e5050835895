"""Drive the OAuth flows through HTTP with Django's test client, as an app and a browser would."""

import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, quote, urlencode, urlsplit

AUTHORIZE = "/auth/oauth2/authorize"
TOKEN = "/v2/auth/oauth2/token"
ME = "/v2/me"
METADATA = "/.well-known/oauth-authorization-server"


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)[:64]
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_url(client, *, redirect_uri=None, scope="PROFILE_READ", state="xyz", **extra) -> str:
    params = {"client_id": client.client_id, "redirect_uri": redirect_uri or client.redirect_uri_list[0]}
    if scope is not None:
        params["scope"] = scope
    if state is not None:
        params["state"] = state
    params.update({k: v for k, v in extra.items() if v is not None})
    return AUTHORIZE + "?" + urlencode(params)


def query_of(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query, keep_blank_values=True).items()}


def asking_again(url: str) -> str:
    """The URL with prompt=consent (unless it says otherwise): the page is shown even to a user who
    granted these scopes before (who would otherwise get a code at once)."""
    return url if "prompt=" in url else url + ("&" if "?" in url else "?") + "prompt=consent"


# The consent page's mark that it was shown (oauthflows.pages.consentshown); only on pages whose answer
# would redirect to a client nobody reviewed.
CONSENT_MARK_RE = re.compile(r'name="consent_shown" value="([^"]+)"')


def consent_form(html: str) -> dict[str, str]:
    """The consent form's fields besides the CSRF token, as the browser would post them."""
    match = CONSENT_MARK_RE.search(html)
    return {"consent_shown": match.group(1)} if match else {}


def consent(browser, url: str, *, decision: str = "allow"):
    """GET the consent page (must be 200), then POST the decision like the form's button does."""
    url = asking_again(url)
    page = browser.get(url)
    assert page.status_code == 200, page.content[:500]
    action = url.replace(AUTHORIZE + "?", f"{AUTHORIZE}/{decision}?", 1)
    return browser.post(action, consent_form(page.content.decode()))


def get_code(browser, client, **params) -> str:
    response = consent(browser, authorize_url(client, **params))
    assert response.status_code == 302, response.content[:500]
    query = query_of(response["Location"])
    assert "code" in query, query
    return query["code"]


def basic(client_id: str, secret: str) -> str:
    # RFC 6749 §2.3.1: form-urlencode each part before base64.
    raw = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
    return "Basic " + base64.b64encode(raw).decode()


def token_request(api, data: dict, *, as_json=False, auth=None, origin=None):
    headers = {"HTTP_AUTHORIZATION": auth} if auth else {}
    if origin:
        headers["HTTP_ORIGIN"] = origin
    if as_json:
        return api.post(TOKEN, data=data, content_type="application/json", **headers)
    return api.post(TOKEN, data=urlencode(data), content_type="application/x-www-form-urlencoded", **headers)


def exchange(api, client, code, *, secret=None, redirect_uri=None, verifier=None, **kw):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri or client.redirect_uri_list[0],
        "client_id": client.client_id,
    }
    if secret is not None:
        data["client_secret"] = secret
    if verifier is not None:
        data["code_verifier"] = verifier
    return token_request(api, data, **kw)


def refresh(api, client, refresh_token, *, secret=None, origin=None, **extra):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client.client_id}
    if secret is not None:
        data["client_secret"] = secret
    data.update(extra)
    return token_request(api, data, origin=origin)


def me(api, access_token, method="get", **kw):
    return getattr(api, method)(ME, HTTP_AUTHORIZATION=f"Bearer {access_token}", **kw)


REVOKE = "/v2/auth/oauth2/revoke"
INTROSPECT = "/v2/auth/oauth2/introspect"


def client_post(api, path, client, data: dict, *, secret=None, auth=None, as_json=False, origin=None):
    """POST to revoke/introspect as `client`: secret in the body unless `auth` (Basic) is given."""
    body = dict(data)
    if auth is None:
        body["client_id"] = client.client_id
        if secret is not None:
            body["client_secret"] = secret
    headers = {"HTTP_AUTHORIZATION": auth} if auth else {}
    if origin:
        headers["HTTP_ORIGIN"] = origin
    if as_json:
        return api.post(path, data=body, content_type="application/json", **headers)
    return api.post(path, data=urlencode(body), content_type="application/x-www-form-urlencoded", **headers)


def assert_tokens(response, scope):
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"access_token", "refresh_token", "token_type", "expires_in", "scope"}
    assert body["token_type"] == "bearer" and body["expires_in"] == 1800 and body["scope"] == scope
    assert response["Cache-Control"] == "no-store" and response["Pragma"] == "no-cache"
    assert response["Content-Type"].startswith("application/json")
    return body
