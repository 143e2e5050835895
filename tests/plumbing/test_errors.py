import json

from django.test import Client


def test_an_unknown_api_path_is_a_json_404_in_the_error_shape(db):
    response = Client().get("/v2/no-such-thing")
    assert response.status_code == 404
    assert response.json() == {"status": "error", "error": {"code": "not_found", "message": "No such endpoint."}}


def test_an_unknown_page_outside_the_api_is_html(db):
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_an_oversized_token_request_body_is_a_clean_400(db, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = Client().post(
        "/v2/auth/oauth2/token", data="grant_type=" + "x" * 5000, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code in (400, 413)
    assert response["Content-Type"].startswith("application/json")


def test_django_400s_on_the_token_endpoints_use_the_rfc_6749_shape(db):
    from django.test import RequestFactory

    from plumbing.errors import bad_request

    for path in ("/v2/auth/oauth2/token", "/v2/auth/oauth2/revoke", "/v2/auth/oauth2/introspect"):
        response = bad_request(RequestFactory().post(path))
        assert response.status_code == 400
        assert json.loads(response.content) == {
            "error": "invalid_request",
            "error_description": "The request could not be read.",
        }
    other = bad_request(RequestFactory().get("/v2/me"))
    assert json.loads(other.content)["status"] == "error"
