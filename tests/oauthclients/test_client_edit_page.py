"""Editing a client from its edit page; what sends it back to review (spec §2.1, §5.8)."""

from oauthclients import services
from oauthclients.models import ClientKind, ClientStatus, OAuthClient
from tests.factories import make_client
from tests.oauthclients.pages import edit_data, url

CALLBACK = "https://calendar-sync.example.com/callback"
SECOND_CALLBACK = "https://calendar-sync.example.com/other-callback"


def test_the_edit_form_is_prefilled_and_shows_the_kind_without_a_control(client, owner, client_obj):
    client.force_login(owner)

    response = client.get(url("client_update", client_obj))

    assert response.status_code == 200
    form = response.context["form"]
    assert "kind" not in form.fields
    assert form["name"].value() == "Calendar Sync"
    assert form["redirect_uris"].value() == CALLBACK
    content = response.content.decode()
    assert 'value="PROFILE_READ" id="id_scopes_PROFILE_READ" checked' in content
    assert "Confidential (server-side, has a secret)" in content
    assert 'name="kind"' not in content


def test_adding_a_redirect_uri_sends_an_approved_client_back_to_review(client, owner, approved):
    client.force_login(owner)
    data = edit_data(approved.client, redirect_uris=f"{CALLBACK}\n{SECOND_CALLBACK}")

    response = client.post(url("client_update", approved.client), data)

    assert response.status_code == 303
    assert response["Location"] == url("client_detail", approved.client)
    edited = OAuthClient.objects.get(pk=approved.client.pk)
    assert edited.status == ClientStatus.PENDING
    assert edited.redirect_uri_list == [CALLBACK, SECOND_CALLBACK]
    page = client.get(response["Location"]).content.decode()
    assert "needs a new review, so the client is pending again" in page


def test_removing_a_redirect_uri_keeps_it_approved(client, owner):
    client.force_login(owner)
    two = make_client(owner, redirect_uris=[CALLBACK, SECOND_CALLBACK], approve=True).client

    response = client.post(url("client_update", two), edit_data(two, redirect_uris=CALLBACK))

    assert response.status_code == 303
    edited = OAuthClient.objects.get(pk=two.pk)
    assert edited.status == ClientStatus.APPROVED
    assert edited.redirect_uri_list == [CALLBACK]
    assert "stays approved" in client.get(response["Location"]).content.decode()


def test_widening_the_scopes_sends_an_approved_client_back_to_review(client, owner, approved):
    client.force_login(owner)
    data = edit_data(approved.client, scopes=[*approved.client.scope_list, "BOOKING_WRITE"])

    client.post(url("client_update", approved.client), data)

    assert OAuthClient.objects.get(pk=approved.client.pk).status == ClientStatus.PENDING


def test_editing_a_rejected_client_resubmits_it(client, owner, client_obj, reviewer):
    client.force_login(owner)
    services.client_reject(client=client_obj, actor=reviewer, reason="Say what it does.")

    response = client.post(url("client_update", client_obj), edit_data(client_obj, purpose="Copies bookings."))

    edited = OAuthClient.objects.get(pk=client_obj.pk)
    assert edited.status == ClientStatus.PENDING
    assert edited.rejection_reason == ""
    assert "resubmitted for review" in client.get(response["Location"]).content.decode()


def test_posting_a_kind_does_not_change_it(client, owner, client_obj):
    client.force_login(owner)

    client.post(url("client_update", client_obj), edit_data(client_obj, kind="public", purpose="Changed."))

    edited = OAuthClient.objects.get(pk=client_obj.pk)
    assert edited.purpose == "Changed."
    assert edited.client_type == ClientKind.CONFIDENTIAL


def test_a_bad_edit_is_a_form_error_and_changes_nothing(client, owner, approved):
    client.force_login(owner)
    data = edit_data(approved.client, name="Renamed", redirect_uris=f"{CALLBACK}#fragment", scopes=[])

    response = client.post(url("client_update", approved.client), data)

    assert response.status_code == 200
    assert set(response.context["form"].errors) == {"redirect_uris", "scopes"}
    unchanged = OAuthClient.objects.get(pk=approved.client.pk)
    assert unchanged.name == "Calendar Sync"
    assert unchanged.status == ClientStatus.APPROVED


def test_selecting_scopes_migrates_a_legacy_client_and_keeps_it_approved(client, owner):
    client.force_login(owner)
    legacy = make_client(owner, is_legacy=True, approve=True).client

    response = client.post(url("client_update", legacy), edit_data(legacy, scopes=["PROFILE_READ", "BOOKING_READ"]))

    assert response.status_code == 303
    migrated = OAuthClient.objects.get(pk=legacy.pk)
    assert migrated.is_legacy is False
    assert migrated.status == ClientStatus.APPROVED
    assert migrated.scope_list == ["BOOKING_READ", "PROFILE_READ"]
    page = client.get(response["Location"]).content.decode()
    assert "no longer legacy" in page
    assert "stays approved" in page


def test_saving_a_legacy_client_without_scopes_keeps_it_legacy(client, owner):
    client.force_login(owner)
    legacy = make_client(owner, is_legacy=True, approve=True).client

    response = client.post(url("client_update", legacy), edit_data(legacy, purpose="Still unrestricted."))

    assert response.status_code == 303
    kept = OAuthClient.objects.get(pk=legacy.pk)
    assert kept.is_legacy is True
    assert kept.scopes == ""
    assert kept.purpose == "Still unrestricted."
    assert kept.status == ClientStatus.APPROVED


def test_the_legacy_edit_form_explains_the_migration_order(client, owner):
    client.force_login(owner)
    legacy = make_client(owner, is_legacy=True).client

    content = client.get(url("client_update", legacy)).content.decode()

    assert "Leave every box empty to keep it legacy" in content
    assert "Add the <code>scope</code> parameter to your authorization URL first" in content
