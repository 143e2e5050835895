"""Logos cannot tie up workers or carry bytes of their own (red-team findings 2 and 6)."""

import io
import struct
import zlib

import pytest
from django.core.cache import caches
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from PIL import Image, PngImagePlugin

from oauthclients import validators
from oauthclients.models import OAuthClient
from oauthclients.validators import MAX_JPEG_SCANS, logo_reencode
from tests.factories import PASSWORD, make_client
from tests.oauthclients.pages import registration_data

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_rate_limit_counts():
    """Rate-limit counts live in the (in-process) cache: start and end each test without any."""
    caches["default"].clear()
    yield
    caches["default"].clear()


def progressive_jpeg(size=(64, 64)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 200, 30)).save(out, format="JPEG", progressive=True)
    return out.getvalue()


def many_scan_jpeg(scans: int = 16_000) -> bytes:
    """The red team's file, small: a progressive JPEG whose last scan is repeated `scans` times."""
    data = progressive_jpeg()
    last_scan = data[data.rindex(b"\xff\xda") : -2]
    return data[:-2] + last_scan * scans + b"\xff\xd9"


def png_chunks(png: bytes) -> list[bytes]:
    chunks, offset = [], 8
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset : offset + 4])
        chunks.append(png[offset + 4 : offset + 8])
        offset += 12 + length
    return chunks


def test_a_progressive_jpeg_with_thousands_of_scans_is_refused_before_decoding(monkeypatch):
    crafted = many_scan_jpeg()
    assert len(crafted) < validators.MAX_LOGO_BYTES and crafted.count(b"\xff\xda") > 16_000

    def never(*args, **kwargs):
        raise AssertionError("the image was decoded")

    monkeypatch.setattr(validators, "_logo_decode", never)
    with pytest.raises(ValidationError, match="progressive scans") as caught:
        logo_reencode(crafted)
    assert caught.value.code == "logo_too_many_scans"


def test_an_ordinary_progressive_jpeg_is_accepted():
    data = progressive_jpeg()
    assert 1 < data.count(b"\xff\xda") <= MAX_JPEG_SCANS
    assert logo_reencode(data).startswith(b"\x89PNG")


def test_decoding_stops_when_it_outlasts_its_time_budget(monkeypatch):
    monkeypatch.setattr(validators, "LOGO_DECODE_SECONDS", -1.0)  # already over budget at the first piece
    with pytest.raises(ValidationError, match="too long to decode") as caught:
        logo_reencode(progressive_jpeg((512, 512)))
    assert caught.value.code == "logo_too_slow"


def test_the_reencoded_png_carries_pixels_only():
    payload = b"\x00" * 50_000 + b"<html><script>alert(document.domain)</script></html>" + b"\x00" * 50_000
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "<script>alert(1)</script>")
    out = io.BytesIO()
    Image.new("RGB", (200, 200), (1, 2, 3)).save(out, format="PNG", icc_profile=payload, pnginfo=info)
    upload = out.getvalue()
    assert b"iCCP" in upload and b"tEXt" in upload

    png = logo_reencode(upload)

    assert set(png_chunks(png)) <= {b"IHDR", b"IDAT", b"IEND"}
    assert b"<script>" not in png and zlib.compress(payload)[:64] not in png


def test_an_icc_profile_in_a_jpeg_is_dropped_too():
    out = io.BytesIO()
    Image.new("RGB", (64, 64), (1, 2, 3)).save(out, format="JPEG", icc_profile=b"<html>" + b"x" * 4000)
    assert set(png_chunks(logo_reencode(out.getvalue()))) <= {b"IHDR", b"IDAT", b"IEND"}


# --- through the developer page, as the red team sent it ---


def test_the_developer_page_answers_the_crafted_file_with_a_form_error(client, owner):
    client.force_login(owner)
    upload = io.BytesIO(many_scan_jpeg())
    upload.name = "logo.jpg"
    response = client.post(reverse("developer:client_create"), {**registration_data(), "logo": upload})
    assert response.status_code == 200
    assert "progressive scans" in response.content.decode()
    assert not OAuthClient.objects.exists()


def logo_upload(browser, owner_client, name="logo.png"):
    out = io.BytesIO()
    Image.new("RGB", (32, 32), (9, 9, 9)).save(out, format="PNG")
    out.seek(0)
    out.name = name
    data = {
        "name": owner_client.name,
        "purpose": owner_client.purpose,
        "website_url": owner_client.website_url,
        "redirect_uris": "\n".join(owner_client.redirect_uri_list),
        "scopes": owner_client.scope_list,
        "logo": out,
    }
    return browser.post(reverse("developer:client_update", args=[owner_client.client_id]), data)


def test_logo_uploads_are_limited_per_user(settings, owner):
    settings.RATELIMITS = {**settings.RATELIMITS, "logo_uploads_per_user": (2, 3600)}
    app = make_client(owner).client
    browser = Client()
    assert browser.login(username=owner.username, password=PASSWORD)

    assert [logo_upload(browser, app).status_code for _ in range(2)] == [303, 303]
    refused = logo_upload(browser, app)

    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    # An edit without a logo is not an upload: it still goes through.
    edit = browser.post(
        reverse("developer:client_update", args=[app.client_id]),
        {
            "name": app.name,
            "purpose": "Edited without a logo.",
            "website_url": app.website_url,
            "redirect_uris": "\n".join(app.redirect_uri_list),
            "scopes": app.scope_list,
        },
    )
    assert edit.status_code == 303


def test_logo_uploads_are_limited_per_address(settings, owner, other_developer):
    settings.RATELIMITS = {**settings.RATELIMITS, "logo_uploads_per_address": (1, 3600)}
    first, second = make_client(owner).client, make_client(other_developer).client
    one, two = Client(), Client()
    assert one.login(username=owner.username, password=PASSWORD)
    assert two.login(username=other_developer.username, password=PASSWORD)

    assert logo_upload(one, first).status_code == 303
    assert logo_upload(two, second).status_code == 429
