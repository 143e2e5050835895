"""The error shapes each kind of endpoint answers with (docs/choices.md, SECURITY.md)."""

# RFC 6749 §5.2: the only error codes the token endpoint returns.
TOKEN_ERRORS = frozenset(
    {
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_target",  # RFC 8707 §2
        "invalid_scope",
    }
)


def assert_token_error(response, *, status=None, error=None) -> dict:
    """{"error", "error_description"} from the §5.2 set, printable ASCII, not cached."""
    assert response.status_code in ((status,) if status else (400, 401)), (response.status_code, response.content[:300])
    body = response.json()
    assert set(body) == {"error", "error_description"}, body
    assert body["error"] in TOKEN_ERRORS, body
    if error:
        assert body["error"] == error, body
    assert all(0x20 <= ord(ch) <= 0x7E and ch not in '"\\' for ch in body["error_description"]), body
    assert response["Cache-Control"] == "no-store"
    return body


def assert_api_error(response, *, status=None, code=None) -> dict:
    """{"status": "error", "error": {"code", "message"[, "details"]}}."""
    if status is not None:
        assert response.status_code == status, (response.status_code, response.content[:300])
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"status", "error"} and body["status"] == "error", body
    assert {"code", "message"} <= set(body["error"]) <= {"code", "message", "details"}, body
    assert isinstance(body["error"]["code"], str) and isinstance(body["error"]["message"], str)
    if code:
        assert body["error"]["code"] == code, body
    return body["error"]


def assert_error_page(response, status=400):
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("text/html")
    assert not response.has_header("Location")
