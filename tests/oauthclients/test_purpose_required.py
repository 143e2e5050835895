"""A client a person registers says what it is for (services._clean_fields): the developer page, the
admin and the command all go through the service, and each shows its refusal. A self-registered
client says no such thing (RFC 7591 has no purpose), and registration keeps working."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from oauthclients import services
from oauthclients.models import OAuthClient
from oauthclients.services import PURPOSE_REQUIRED
from tests.factories import make_client
from tests.oauthclients.test_admin import add_form_data


@pytest.mark.parametrize("purpose", ["", "   \n  "])
def test_the_service_refuses_a_new_client_without_a_purpose(owner, purpose):
    with pytest.raises(ValidationError) as caught:
        make_client(owner, purpose=purpose)
    assert caught.value.message_dict["purpose"] == [PURPOSE_REQUIRED]
    assert not OAuthClient.objects.exists()


def test_the_service_refuses_an_edit_that_empties_the_purpose(owner, client_obj):
    with pytest.raises(ValidationError) as caught:
        services.client_update(
            client=client_obj,
            actor=owner,
            name=client_obj.name,
            purpose="",
            website_url=client_obj.website_url,
            redirect_uris=client_obj.redirect_uri_list,
            scopes=client_obj.scope_list,
        )
    assert caught.value.message_dict["purpose"] == [PURPOSE_REQUIRED]
    client_obj.refresh_from_db()
    assert client_obj.purpose == "Syncs bookings to your calendar."


def test_the_developer_page_shows_the_services_refusal(client, owner):
    client.force_login(owner)
    response = client.post(
        reverse("developer:client_create"),
        {
            "name": "No Purpose",
            "purpose": "",
            "website_url": "https://nopurpose.example.com",
            "kind": "confidential",
            "redirect_uris": "https://nopurpose.example.com/cb",
            "scopes": ["PROFILE_READ"],
        },
    )
    assert response.status_code == 200
    assert str(PURPOSE_REQUIRED) in response.content.decode()
    assert not OAuthClient.objects.exists()


def test_the_admin_add_form_shows_the_services_refusal(staff, owner):
    response = staff.post(reverse("admin:oauthclients_oauthclient_add"), add_form_data(owner, purpose=""))
    assert response.status_code == 200
    assert str(PURPOSE_REQUIRED) in response.content.decode()
    assert not OAuthClient.objects.filter(name="Admin Made").exists()


def test_a_self_registered_client_needs_no_purpose(client, db):
    body = {
        "client_name": "An Agent",
        "redirect_uris": ["http://127.0.0.1:33418/cb"],
        "token_endpoint_auth_method": "none",
    }
    response = client.post("/v2/auth/oauth2/register", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    assert OAuthClient.objects.get(client_id=response.json()["client_id"]).purpose == ""
