"""Registering a client from the developer settings (spec §2.1)."""

import pytest

from oauthclients.models import ClientAuditEvent, ClientSecret, ClientStatus, OAuthClient, digest
from tests.oauthclients.pages import registration_data, shown_secret, url


def test_the_form_offers_no_legacy_option(client, owner):
    client.force_login(owner)

    response = client.get(url("client_create"))

    assert response.status_code == 200
    assert "is_legacy" not in response.context["form"].fields
    assert "legacy" not in response.content.decode().lower()


def test_the_form_groups_the_scopes_by_resource_with_read_and_write_columns(client, owner):
    client.force_login(owner)

    content = client.get(url("client_create")).content.decode()

    assert content.index('<span class="resource-name">Event types</span>') < content.index(
        '<span class="resource-name">Bookings</span>'
    )
    assert content.count('class="scope-resource"') == 10
    assert '<th scope="col">Read</th><th scope="col">Write</th>' in content
    assert 'name="scopes" value="ORG_WEBHOOK_WRITE"' in content
    assert "Create, edit and delete your organization&#x27;s webhooks" in content
    assert "spec §" not in content


def test_registering_a_confidential_client_shows_its_secret_once_after_a_redirect(client, owner):
    client.force_login(owner)

    response = client.post(url("client_create"), registration_data())

    new = OAuthClient.objects.get(user=owner)
    assert response["Location"] == url("client_detail", new)
    assert "no-store" in response["Cache-Control"]
    assert new.status == ClientStatus.PENDING
    assert new.is_legacy is False
    assert new.scope_list == ["BOOKING_READ", "PROFILE_READ"]
    assert new.redirect_uri_list == ["https://mirror.example.com/callback", "http://127.0.0.1:8765/callback"]
    page, plaintext = shown_secret(client, response)
    content = page.content.decode()
    assert content.count(plaintext) == 1
    assert "It is shown this once" in content
    assert new.client_id in content
    assert "no-store" in page["Cache-Control"]


def test_reloading_the_page_shows_no_secret_and_creates_nothing(client, owner):
    client.force_login(owner)
    response = client.post(url("client_create"), registration_data())
    _page, plaintext = shown_secret(client, response)

    reloaded = client.get(response["Location"])

    assert reloaded.context["new_secret"] is None
    assert plaintext not in reloaded.content.decode()
    assert OAuthClient.objects.filter(user=owner).count() == 1
    assert ClientSecret.objects.filter(client__user=owner).count() == 1


def test_only_the_digest_of_the_new_secret_is_stored(client, owner):
    client.force_login(owner)

    _page, plaintext = shown_secret(client, client.post(url("client_create"), registration_data()))

    stored = ClientSecret.objects.get(client__user=owner)
    assert stored.digest == digest(plaintext)
    assert plaintext not in (stored.digest, stored.hint)
    assert plaintext.startswith(stored.hint)
    assert OAuthClient.objects.get(user=owner).client_secret == ""
    assert all(plaintext not in str(event.detail) for event in ClientAuditEvent.objects.all())


def test_the_new_secret_is_not_in_the_session_the_url_or_a_cookie_in_clear(client, owner):
    client.force_login(owner)
    response = client.post(url("client_create"), registration_data())
    # The hand-off cookie is encrypted, HttpOnly, SameSite=Strict and scoped to the client's page.
    handoff = response.cookies["new_secret_once"]
    assert handoff["httponly"] and handoff["samesite"] == "Strict"
    assert handoff["path"] == response["Location"]
    page, plaintext = shown_secret(client, response)
    assert plaintext not in handoff.value and plaintext not in response["Location"]
    new = OAuthClient.objects.get(user=owner)
    # The page that showed it deleted the cookie.
    assert page.cookies["new_secret_once"]["max-age"] == 0

    later = client.get(url("client_detail", new))

    assert later.status_code == 200
    assert plaintext not in later.content.decode()
    assert "It is shown this once" not in later.content.decode()
    assert new.secrets.get().hint in later.content.decode()
    assert plaintext not in str(dict(client.session.items()))
    assert plaintext not in str(client.cookies)


def test_a_handoff_cookie_for_another_client_shows_nothing(client, owner):
    client.force_login(owner)
    response = client.post(url("client_create"), registration_data())
    other = client.post(url("client_create"), registration_data(name="Other"))
    stolen = other.cookies["new_secret_once"].value
    first = OAuthClient.objects.get(user=owner, name="Booking Mirror")
    client.cookies["new_secret_once"] = stolen

    page = client.get(response["Location"])

    assert page.context["new_secret"] is None
    assert first.client_id in response["Location"]


def test_registering_a_public_client_redirects_to_its_page_without_a_secret(client, owner):
    client.force_login(owner)

    response = client.post(url("client_create"), registration_data(kind="public"))

    new = OAuthClient.objects.get(user=owner)
    assert response.status_code == 303
    assert response["Location"] == url("client_detail", new)
    assert new.status == ClientStatus.PENDING
    assert new.secrets.count() == 0
    page = client.get(response["Location"]).content.decode()
    assert "registered and pending review" in page
    assert "uses PKCE" in page


def test_posting_is_legacy_does_not_make_a_legacy_client(client, owner):
    client.force_login(owner)

    client.post(url("client_create"), registration_data(is_legacy="on", scopes=["PROFILE_READ"]))

    new = OAuthClient.objects.get(user=owner)
    assert new.is_legacy is False
    assert new.scope_list == ["PROFILE_READ"]


def test_posting_is_legacy_without_scopes_is_refused(client, owner):
    client.force_login(owner)

    response = client.post(url("client_create"), registration_data(is_legacy="on", scopes=[]))

    assert response.status_code == 200
    assert response.context["form"].errors["scopes"] == ["Select at least one scope."]
    assert not OAuthClient.objects.exists()


ELEVEN_URIS = "\n".join(f"https://mirror.example.com/cb{n}" for n in range(11))


@pytest.mark.parametrize(
    "field,overrides,message",
    [
        ("redirect_uris", {"redirect_uris": ELEVEN_URIS}, "at most 10 redirect URIs"),
        ("redirect_uris", {"redirect_uris": "http://example.com/callback"}, "must use https"),
        ("redirect_uris", {"redirect_uris": "https://mirror.example.com/cb#done"}, "cannot contain a fragment"),
        ("redirect_uris", {"redirect_uris": ""}, "at least one redirect URI"),
        ("redirect_uris", {"redirect_uris": "https://mirror.example.com/\x00"}, "Null characters"),
        ("redirect_uris", {"redirect_uris": "https://mirror.example.com/" + "a" * 5000}, "at most 2000 characters"),
        ("redirect_uris", {"redirect_uris": "http://x.io/\n" * 100_000}, "Ensure this value has at most 20020"),
        ("scopes", {"scopes": []}, "Select at least one scope."),
        ("scopes", {"scopes": ["PROFILE_READ", "ADMIN_EVERYTHING"]}, "Unknown scope: ADMIN_EVERYTHING"),
        ("scopes", {"scopes": ["X" * 5000]}, "Unknown scope"),
        ("name", {"name": ""}, "Name is required."),
        ("name", {"name": "   "}, "Name is required."),
        ("name", {"name": "N" * 10_000}, "at most 100 characters"),
        ("name", {"name": "Mirror\x00"}, "Null characters"),
        ("purpose", {"purpose": "P" * 100_000}, "at most 2000 characters"),
        ("website_url", {"website_url": "not a url"}, "http(s) URL"),
        ("website_url", {"website_url": "javascript:alert(1)"}, "http(s) URL"),
        ("website_url", {"website_url": "https://mirror.example.com/\x00"}, "Null characters"),
        ("kind", {"kind": "legacy"}, "Select a valid choice"),
        ("kind", {"kind": ""}, "required"),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 40 else None,
)
def test_bad_input_is_a_form_error_and_registers_nothing(client, owner, field, overrides, message):
    client.force_login(owner)

    response = client.post(url("client_create"), registration_data(**overrides))

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert any(message in error for error in errors[field]), errors
    assert message.replace("'", "&#x27;") in response.content.decode()
    assert not OAuthClient.objects.exists()
    assert not ClientSecret.objects.exists()


def test_every_field_problem_is_reported_at_once(client, owner):
    client.force_login(owner)

    response = client.post(
        url("client_create"),
        registration_data(name="", website_url="nope", redirect_uris="http://example.com/", scopes=["NOPE"]),
    )

    assert set(response.context["form"].errors) == {"name", "website_url", "redirect_uris", "scopes"}


def test_a_form_with_errors_keeps_what_was_entered(client, owner):
    client.force_login(owner)

    response = client.post(url("client_create"), registration_data(name="", scopes=["TEAM_BOOKING_READ"]))

    content = response.content.decode()
    assert 'value="TEAM_BOOKING_READ" id="id_scopes_TEAM_BOOKING_READ" checked' in content
    assert 'value="PROFILE_READ" id="id_scopes_PROFILE_READ">' in content
    assert "https://mirror.example.com/callback" in content


# --- the hand-off is bound to the session and good for one read (red-team, "Info") ---


def test_a_replayed_handoff_cookie_shows_nothing_after_the_first_read(client, owner):
    client.force_login(owner)
    response = client.post(url("client_create"), registration_data())
    saved = response.cookies["new_secret_once"].value
    _page, plaintext = shown_secret(client, response)
    assert plaintext

    client.cookies["new_secret_once"] = saved  # the same cookie, within its 120 s
    replay = client.get(response["Location"])

    assert replay.context["new_secret"] is None and plaintext not in replay.content.decode()


def test_a_handoff_cookie_shows_nothing_after_logout_and_a_new_login(client, owner):
    client.force_login(owner)
    response = client.post(url("client_create"), registration_data())
    saved = response.cookies["new_secret_once"].value
    client.logout()
    client.force_login(owner)

    client.cookies["new_secret_once"] = saved
    page = client.get(response["Location"])

    assert page.context["new_secret"] is None


def test_a_handoff_cookie_carried_to_another_session_shows_nothing(owner):
    from django.test import Client

    first, second = Client(), Client()
    first.force_login(owner)
    second.force_login(owner)
    response = first.post(url("client_create"), registration_data())

    second.cookies["new_secret_once"] = response.cookies["new_secret_once"].value
    assert second.get(response["Location"]).context["new_secret"] is None
    _page, plaintext = shown_secret(first, response)  # the session that asked still gets it, once
    assert plaintext
