"""What a /v2 resource endpoint's answers must look like (RFC 6750 §3, the API's error shape)."""

import re

from scopes.authentication import REALM

# RFC 6750 §3: auth-param values are quoted strings; scope is a space-separated list.
_PARAM = re.compile(r'(\w+)="([^"]*)"')
_GRANTED = re.compile(r"The token grants: ([^.]*)\.")


def challenge(response) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer ...` header, which must be present."""
    header = response.get("WWW-Authenticate")
    assert header is not None, f"no WWW-Authenticate on a {response.status_code}"
    scheme, _, params = header.partition(" ")
    assert scheme == "Bearer", header
    return dict(_PARAM.findall(params))


def error_of(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.json()
    assert body["status"] == "error" and set(body) == {"status", "error"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    return body["error"]


def assert_success(response, view: str | None = None) -> dict:
    assert response.status_code == 200, (response.status_code, response.content[:500])
    body = response.json()
    assert body["status"] == "success", body
    if view is not None:
        assert body["data"]["view"] == view, body
    return body["data"]


def assert_no_token(response) -> dict:
    """401 with a bare challenge: no error attribute when no credentials were sent (RFC 6750 §3.1)."""
    error = error_of(response, 401)
    assert error["code"] == "unauthorized", error
    assert challenge(response) == {"realm": REALM} | resource_metadata()
    return error


def assert_invalid_token(response) -> dict:
    error = error_of(response, 401)
    assert error["code"] == "invalid_token", error
    assert challenge(response) == {"realm": REALM, "error": "invalid_token"} | resource_metadata()
    return error


def resource_metadata() -> dict:
    """RFC 9728 §5.1: every 401 names the service's protected resource metadata."""
    from django.conf import settings

    from scopes.resource import metadata_url

    return {"resource_metadata": metadata_url(settings.OAUTH_RESOURCE_URI)} if settings.OAUTH_RESOURCE_URI else {}


def assert_insufficient_scope(response, *, required: str | None, granted: str) -> dict:
    """403 naming the required scope (header and message) and every granted one (message)."""
    error = error_of(response, 403)
    assert error["code"] == "insufficient_scope", error
    params = challenge(response)
    assert params.get("error") == "insufficient_scope", params
    assert params.get("resource_metadata") == resource_metadata().get("resource_metadata"), params
    if required is None:
        assert "scope" not in params, params
        assert "declares no scope" in error["message"], error
    else:
        assert params.get("scope") == required, params
        assert f"requires the {required} scope" in error["message"], error
    listed = _GRANTED.search(error["message"])
    assert listed is not None, error
    assert set(listed.group(1).split()) == (set(granted.split()) or {"(none)"}), error
    return error


def expected_challenge(error: str | None = None) -> str:
    """The exact WWW-Authenticate of a 401 from a scoped view."""
    value = f'Bearer realm="{REALM}"' + (f', error="{error}"' if error else "")
    metadata = resource_metadata()
    return value + (f', resource_metadata="{metadata["resource_metadata"]}"' if metadata else "")
