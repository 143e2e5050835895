"""Shared bits of the developer-page tests: URLs and a valid registration form."""

from django.urls import reverse

from oauthclients.models import OAuthClient


def url(name: str, client: OAuthClient | None = None, *extra) -> str:
    args = [client.client_id, *extra] if client is not None else []
    return reverse(f"developer:{name}", args=args)


def registration_data(**overrides) -> dict:
    data = {
        "name": "Booking Mirror",
        "purpose": "Mirrors bookings into a spreadsheet.",
        "website_url": "https://mirror.example.com",
        "kind": "confidential",
        "redirect_uris": "https://mirror.example.com/callback\r\nhttp://127.0.0.1:8765/callback",
        "scopes": ["BOOKING_READ", "PROFILE_READ"],
    }
    data.update(overrides)
    return data


def edit_data(client: OAuthClient, **overrides) -> dict:
    """The edit form as it is prefilled for `client`, with some fields changed."""
    data = {
        "name": client.name,
        "purpose": client.purpose,
        "website_url": client.website_url,
        "redirect_uris": "\n".join(client.redirect_uri_list),
        "scopes": client.scope_list,
    }
    data.update(overrides)
    return data


def shown_secret(browser, response) -> tuple[object, str]:
    """Follow the 303 of a POST that made a secret; return (the page, the secret it shows once)."""
    assert response.status_code == 303, response.status_code
    page = browser.get(response["Location"])
    assert page.status_code == 200
    return page, page.context["new_secret"].plaintext
