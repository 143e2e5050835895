"""Logos: validated as an image, size-limited, re-encoded to PNG, served from this origin."""

import io

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from PIL import Image

from oauthclients import services
from oauthclients.models import ClientStatus
from oauthclients.validators import LOGO_SIZE, MAX_LOGO_BYTES, logo_reencode
from tests.factories import make_client

pytestmark = pytest.mark.django_db


def image_bytes(fmt="PNG", size=(300, 200), color=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_it_reencodes_an_image_to_a_small_png(fmt):
    png = logo_reencode(image_bytes(fmt))
    with Image.open(io.BytesIO(png)) as image:
        assert image.format == "PNG"
        assert max(image.size) == LOGO_SIZE


def test_it_drops_bytes_hidden_after_the_image():
    payload = image_bytes() + b"<script>alert(1)</script>"
    assert b"<script>" not in logo_reencode(payload)


@pytest.mark.parametrize(
    "data",
    [b"", b"<svg xmlns='http://www.w3.org/2000/svg'></svg>", b"GIF89a not really", b"\x89PNG\r\n\x1a\n broken"],
)
def test_it_refuses_what_is_not_an_image(data):
    with pytest.raises(ValidationError):
        logo_reencode(data)


def test_it_refuses_a_file_over_the_size_limit():
    with pytest.raises(ValidationError, match="at most 256 KB"):
        logo_reencode(b"\x89PNG" + b"\x00" * MAX_LOGO_BYTES)


def test_it_refuses_too_many_pixels_without_decoding_them():
    # A small file (1 bit per pixel, compressed) that would decode to 25 million pixels.
    out = io.BytesIO()
    Image.new("1", (5000, 5000)).save(out, format="PNG")
    assert len(out.getvalue()) < MAX_LOGO_BYTES
    with pytest.raises(ValidationError, match="2048"):
        logo_reencode(out.getvalue())


def test_the_approved_logo_is_served_from_this_origin_as_png(owner, reviewer):
    client = make_client_with(owner, logo=image_bytes("JPEG"))
    client = services.client_approve(client=client.client, actor=reviewer)
    assert client.shown.logo_url.startswith(f"/logos/{client.client_id}.png?v=")
    response = Client().get(client.shown.logo_url)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response.content.startswith(b"\x89PNG")
    assert Client().get(f"/logos/{make_client(owner, name='No logo').client.client_id}.png").status_code == 404


def test_a_bad_logo_is_reported_on_its_field(owner):
    with pytest.raises(ValidationError) as caught:
        make_client_with(owner, logo=b"not an image")
    assert "logo" in caught.value.message_dict


def make_client_with(owner, **extra):
    return services.client_create(
        owner=owner,
        name="Logo App",
        purpose="Shows your bookings.",
        website_url="https://logo.example.com",
        kind="confidential",
        redirect_uris=["https://logo.example.com/cb"],
        scopes=["PROFILE_READ"],
        **extra,
    )


def _edit(client, owner, **changes):
    arguments = {
        "name": client.name,
        "purpose": client.purpose,
        "website_url": client.website_url,
        "redirect_uris": client.redirect_uri_list,
        "scopes": client.scope_list,
        **changes,
    }
    return services.client_update(client=client, actor=owner, **arguments)


@pytest.mark.parametrize(
    "changes",
    [
        {"logo": image_bytes()},
        {"privacy_policy_url": "https://calendar-sync.example.com/privacy"},
        {"terms_url": "https://calendar-sync.example.com/terms"},
    ],
    ids=["logo", "privacy", "terms"],
)
def test_changing_logo_or_policy_links_sends_an_approved_client_back_to_review(owner, changes):
    client = make_client(owner, approve=True).client
    updated = _edit(client, owner, **changes)
    assert updated.status == ClientStatus.PENDING
    resubmitted = updated.audit_events.filter(action="client.resubmitted").get()
    assert resubmitted.detail["because"] == [next(iter(changes))]


def test_removing_the_logo_sends_an_approved_client_back_to_review(owner):
    client = make_client_with(owner, logo=image_bytes(), approve=True).client
    assert client.has_logo and client.status == ClientStatus.APPROVED
    updated = _edit(client, owner, logo_remove=True)
    assert not updated.has_logo and updated.status == ClientStatus.PENDING


def test_leaving_policy_links_out_keeps_them(owner):
    client = make_client_with(owner, privacy_policy_url="https://logo.example.com/privacy", approve=True).client
    updated = _edit(client, owner, purpose="New purpose")
    assert updated.privacy_policy_url == "https://logo.example.com/privacy"
    assert updated.status == ClientStatus.APPROVED


def test_a_policy_link_must_be_http_or_https(owner):
    with pytest.raises(ValidationError) as caught:
        make_client_with(owner, privacy_policy_url="javascript:alert(1)", terms_url="ftp://x.example.com")
    assert set(caught.value.message_dict) == {"privacy_policy_url", "terms_url"}
