import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.models import set_token_value

from oauthclients import services
from oauthclients.admin import ClientAddForm, OAuthClientAdmin
from oauthclients.models import (
    AccessToken,
    AuditAction,
    ClientAuditEvent,
    ClientSecret,
    ClientStatus,
    OAuthClient,
    digest,
)
from tests.factories import make_client
from tests.security.credentials import digests_on_page

CHANGELIST = "admin:oauthclients_oauthclient_changelist"
SECRET_IN_PAGE = re.compile(r'class="one-time-secret">(cs_[A-Za-z0-9_-]+)<')


def run_action(http, action, clients, **confirmation):
    """Pick an action on the changelist; with `confirmation`, submit its intermediate page instead."""
    data = {"action": action, ACTION_CHECKBOX_NAME: [c.pk for c in clients]}
    data.update({"post": "yes", **confirmation} if confirmation else {"index": 0})
    # The changelist opens on the pending queue; its form posts to the list as filtered ("All" here).
    return http.post(reverse(CHANGELIST) + "?status__exact=all", data)


def approve_action(http, clients):
    """The bulk Approve as an administrator uses it: its confirmation page, then the confirm button."""
    confirmation = run_action(http, "approve_clients", clients)
    assert confirmation.status_code == 200
    return run_action(http, "approve_clients", clients, **digests_on_page(confirmation))


def messages_of(response):
    return [str(message) for message in get_messages(response.wsgi_request)]


def refreshed(client):
    client.refresh_from_db()
    return client


def secrets_in(response):
    return SECRET_IN_PAGE.findall(response.content.decode())


def test_our_admin_replaces_the_one_django_oauth_toolkit_registers():
    assert isinstance(admin.site._registry[OAuthClient], OAuthClientAdmin)


def test_changelist_lists_clients_and_filters_them_by_status(staff, client_obj, approved):
    response = staff.get(reverse(CHANGELIST))
    assert response.status_code == 200
    assert {spec.title for spec in response.context["cl"].filter_specs} == {"status", "kind", "legacy"}
    page = response.content.decode()
    # It opens on the review queue.
    assert client_obj.client_id in page and approved.client.client_id not in page

    page = staff.get(reverse(CHANGELIST), {"status__exact": "all"}).content.decode()
    assert client_obj.client_id in page and approved.client.client_id in page

    response = staff.get(reverse(CHANGELIST), {"status__exact": ClientStatus.APPROVED})
    page = response.content.decode()
    assert approved.client.client_id in page
    assert client_obj.client_id not in page


def test_changelist_searches_by_owner_username(staff, client_obj, other_developer):
    theirs = make_client(other_developer, name="Other App").client
    page = staff.get(reverse(CHANGELIST), {"q": "otherdev"}).content.decode()
    assert theirs.client_id in page
    assert client_obj.client_id not in page


def test_non_staff_users_are_redirected_to_the_admin_login(client, owner):
    client.force_login(owner)
    response = client.get(reverse(CHANGELIST))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_approve_action_approves_pending_clients_and_reports_the_count(staff, reviewer, client_obj):
    response = approve_action(staff, [client_obj])
    assert response.status_code == 302
    client_obj = refreshed(client_obj)
    assert client_obj.status == ClientStatus.APPROVED
    assert client_obj.reviewed_by == reviewer
    assert "Approved 1 client." in messages_of(response)


@pytest.mark.django_db(transaction=True)  # real commits: each mail goes out as its review commits
def test_a_mail_failure_neither_fails_the_action_nor_stops_the_batch(staff, owner, client_obj, mailoutbox):
    broken = make_client(owner, name="Broken").client
    OAuthClient.objects.filter(pk=broken.pk).update(name="Broken\r\nBcc: x@example.com")
    third = make_client(owner, name="Third").client
    response = approve_action(staff, [client_obj, broken, third])
    assert response.status_code == 302
    assert {refreshed(c).status for c in (client_obj, broken, third)} == {ClientStatus.APPROVED}
    assert len(mailoutbox) == 2  # the other two owners were told
    shown = messages_of(response)
    assert "Approved 3 clients." in shown
    assert any("could not be sent" in text and broken.client_id in text for text in shown)


def test_the_admin_add_form_refuses_a_name_with_a_line_break(staff, owner):
    response = staff.post(reverse("admin:oauthclients_oauthclient_add"), add_form_data(owner, name="A\r\nB"))
    assert response.status_code == 200
    assert "single line" in " ".join(response.context["form"].errors["name"])
    assert not OAuthClient.objects.filter(name__startswith="A").exists()


def test_approving_a_rejected_client_reports_an_error_and_leaves_it_rejected(staff, reviewer, client_obj, approved):
    services.client_reject(client=client_obj, actor=reviewer, reason="Misleading name")
    pending = make_client(approved.client.owner, name="Still Pending").client

    response = approve_action(staff, [client_obj, pending])

    assert response.status_code == 302
    assert refreshed(client_obj).status == ClientStatus.REJECTED
    assert refreshed(pending).status == ClientStatus.APPROVED
    reported = messages_of(response)
    assert "Approved 1 client." in reported
    assert any(
        client_obj.client_id in m and "Only a pending or unverified client can be approved" in m for m in reported
    )


def test_reject_action_asks_for_a_reason_then_rejects_with_it(staff, reviewer, client_obj):
    response = run_action(staff, "reject_clients", [client_obj])
    assert response.status_code == 200
    assert "admin/oauthclients/reject_clients.html" in [t.name for t in response.templates]
    assert refreshed(client_obj).status == ClientStatus.PENDING

    response = run_action(staff, "reject_clients", [client_obj], reason="  Redirect URI points elsewhere  ")

    assert response.status_code == 302
    client_obj = refreshed(client_obj)
    assert client_obj.status == ClientStatus.REJECTED
    assert client_obj.rejection_reason == "Redirect URI points elsewhere"
    assert client_obj.reviewed_by == reviewer
    assert "Rejected 1 client." in messages_of(response)


def test_reject_action_refuses_an_empty_reason(staff, client_obj):
    response = run_action(staff, "reject_clients", [client_obj], reason="   ")
    assert response.status_code == 200
    assert "Give the owner a reason for the rejection." in response.content.decode()
    assert refreshed(client_obj).status == ClientStatus.PENDING


def test_create_secret_action_shows_the_plaintext_once_and_stores_only_the_digest(staff, client_obj):
    response = run_action(staff, "create_secret", [client_obj])

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    (plaintext,) = secrets_in(response)
    newest = client_obj.secrets.latest("id")
    assert newest.digest == digest(plaintext)
    assert plaintext not in {newest.digest, newest.hint}
    assert plaintext[: len(newest.hint)] == newest.hint
    # Not in the messages (session or cookie) nor on any later page.
    assert all(plaintext not in m for m in messages_of(response))
    assert plaintext not in str(response.cookies)
    later = staff.get(reverse("admin:oauthclients_oauthclient_change", args=[client_obj.pk]))
    assert plaintext not in later.content.decode()


def test_create_secret_action_refuses_a_third_active_secret(staff, owner, client_obj):
    services.client_secret_create(client=client_obj, actor=owner)

    response = run_action(staff, "create_secret", [client_obj])

    assert response.status_code == 302
    assert client_obj.secrets.filter(revoked_at__isnull=True).count() == 2
    assert any("already has 2 active secrets" in m for m in messages_of(response))


def test_revoke_action_lists_active_secrets_by_hint_and_revokes_the_chosen_one(staff, owner, created):
    client_obj, old = created.client, created.secret.secret
    new = services.client_secret_create(client=client_obj, actor=owner).secret

    response = run_action(staff, "revoke_secret", [client_obj])
    assert response.status_code == 200
    page = response.content.decode()
    assert old.hint in page and new.hint in page
    assert old.digest not in page and new.digest not in page

    response = run_action(staff, "revoke_secret", [client_obj], secret=[old.pk])

    assert response.status_code == 302
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.revoked_at is not None
    assert new.revoked_at is None
    assert "Revoked 1 secret." in messages_of(response)
    assert ClientAuditEvent.objects.filter(client=client_obj, action=AuditAction.SECRET_REVOKED).count() == 1


def test_revoke_action_refuses_the_last_active_secret(staff, created):
    only = created.secret.secret

    response = run_action(staff, "revoke_secret", [created.client], secret=[only.pk])

    assert response.status_code == 302
    only.refresh_from_db()
    assert only.revoked_at is None
    assert any("last active secret and cannot be revoked" in m for m in messages_of(response))


def test_revoke_action_refuses_a_secret_of_a_client_that_was_not_selected(staff, owner, created, approved):
    services.client_secret_create(client=created.client, actor=owner)
    services.client_secret_create(client=approved.client, actor=owner)
    foreign = approved.secret.secret

    response = run_action(staff, "revoke_secret", [created.client], secret=[foreign.pk])

    assert response.status_code == 200  # the page again, with the choice refused
    foreign.refresh_from_db()
    assert foreign.revoked_at is None


def test_status_cannot_be_changed_through_the_change_form(staff, client_obj):
    url = reverse("admin:oauthclients_oauthclient_change", args=[client_obj.pk])
    assert staff.get(url).status_code == 200

    response = staff.post(url, {"status": ClientStatus.APPROVED, "name": "Renamed"})

    assert response.status_code == 403
    client_obj = refreshed(client_obj)
    assert client_obj.status == ClientStatus.PENDING
    assert client_obj.name == "Calendar Sync"


def test_change_page_lists_secrets_by_hint_and_never_shows_a_digest(staff, created):
    secret = created.secret.secret
    page = staff.get(reverse("admin:oauthclients_oauthclient_change", args=[created.client.pk])).content.decode()
    assert secret.hint in page
    assert secret.digest not in page
    assert 'name="status"' not in page


def add_form_data(owner, **overrides):
    return {
        "owner": owner.pk,
        "name": "Admin Made",
        "client_type": "confidential",
        "redirect_uris": "https://admin-made.example.com/cb\nhttp://127.0.0.1:9000/cb",
        "scopes": ["PROFILE_READ", "SCHEDULE_READ"],
        "website_url": "https://admin-made.example.com",
        "purpose": "Shows your bookings in the office app.",
        **overrides,
    }


def test_adding_a_client_goes_through_the_service_and_shows_its_first_secret_once(staff, reviewer, owner):
    response = staff.post(reverse("admin:oauthclients_oauthclient_add"), add_form_data(owner))

    assert response.status_code == 200
    new = OAuthClient.objects.get(name="Admin Made")
    assert new.owner == owner
    assert new.status == ClientStatus.PENDING
    assert new.scope_list == ["SCHEDULE_READ", "PROFILE_READ"]  # catalog order
    assert new.redirect_uri_list == ["https://admin-made.example.com/cb", "http://127.0.0.1:9000/cb"]
    (plaintext,) = secrets_in(response)
    assert ClientSecret.objects.get(client=new).digest == digest(plaintext)
    assert ClientAuditEvent.objects.get(client=new, action=AuditAction.CLIENT_CREATED).actor == reviewer


def test_an_administrator_can_add_a_legacy_client(staff, owner):
    data = add_form_data(owner, is_legacy="on", scopes=[], client_type="public", approve="on")

    response = staff.post(reverse("admin:oauthclients_oauthclient_add"), data)

    assert response.status_code == 200
    new = OAuthClient.objects.get(name="Admin Made")
    assert new.is_legacy and new.scope_list == []
    assert new.status == ClientStatus.APPROVED
    assert secrets_in(response) == []


def test_adding_a_client_shows_the_services_errors_on_the_form(staff, owner):
    data = add_form_data(owner, redirect_uris="http://evil.example.com/cb", scopes=[])

    response = staff.post(reverse("admin:oauthclients_oauthclient_add"), data)

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "must use https" in " ".join(errors["redirect_uris"])
    assert "Select at least one scope." in errors["scopes"]
    assert not OAuthClient.objects.filter(name="Admin Made").exists()


def test_audit_events_are_read_only(staff, client_obj):
    event = ClientAuditEvent.objects.get(client=client_obj, action=AuditAction.CLIENT_CREATED)
    changelist = reverse("admin:oauthclients_clientauditevent_changelist")
    change = reverse("admin:oauthclients_clientauditevent_change", args=[event.pk])

    assert staff.get(changelist, {"q": client_obj.client_id}).status_code == 200
    assert staff.get(change).status_code == 200
    assert staff.get(reverse("admin:oauthclients_clientauditevent_add")).status_code == 403
    assert staff.post(change, {"action": "client.approved"}).status_code == 403
    delete = reverse("admin:oauthclients_clientauditevent_delete", args=[event.pk])
    assert staff.post(delete, {"post": "yes"}).status_code == 403
    event.refresh_from_db()
    assert event.action == AuditAction.CLIENT_CREATED


def test_audit_events_filter_by_client_from_the_client_page(staff, client_obj, approved):
    response = staff.get(
        reverse("admin:oauthclients_clientauditevent_changelist"), {"client__id__exact": client_obj.pk}
    )
    assert response.status_code == 200
    assert {event.client_id for event in response.context["cl"].result_list} == {client_obj.pk}


def test_token_pages_never_show_the_token_or_its_checksum(staff, end_user, approved):
    raw = "at_" + "x" * 40
    token = AccessToken(user=end_user, application=approved.client, scope="PROFILE_READ")
    token.expires = timezone.now() + timedelta(minutes=30)
    set_token_value(token, raw)
    token.save()

    changelist = staff.get(reverse("admin:oauthclients_accesstoken_changelist"))
    detail = staff.get(reverse("admin:oauthclients_accesstoken_change", args=[token.pk]))

    for response in (changelist, detail):
        assert response.status_code == 200
        page = response.content.decode()
        assert raw not in page
        assert token.token_checksum not in page


def test_an_exchanged_tokens_page_names_the_token_it_came_from_even_once_that_one_ended(staff, end_user, approved):
    from tokens.services import Lineage, access_token_issue

    def issue(value, lineage):
        return access_token_issue(
            value=value,
            user=end_user,
            client=approved.client,
            scope="PROFILE_READ",
            expires=timezone.now() + timedelta(minutes=30),
            resource=[],
            lineage=lineage,
        )

    parent = issue("at_" + "p" * 40, Lineage())
    child = issue("at_" + "c" * 40, Lineage.of_exchange(parent, family=None))
    detail = reverse("admin:oauthclients_accesstoken_change", args=[child.pk])
    page = staff.get(detail).content.decode()
    assert f"Access token #{parent.pk}" in page and "(ended)" not in page
    # A routine refresh deletes the subject's row; the reference stays for the audit.
    AccessToken.objects.filter(pk=parent.pk).delete()
    assert f"Access token #{parent.pk} (ended)" in staff.get(detail).content.decode()


def test_the_admin_switches_a_resource_servers_token_format_and_refuses_an_app(staff, reviewer, owner):
    server = services.resource_server_create(
        owner=reviewer, name="Bookings", resource_uri="https://bookings.example.com/v2", actor=reviewer
    ).client
    no_uri = services.resource_server_create(owner=reviewer, name="Old API", actor=reviewer).client
    app = make_client(owner, approve=True).client
    response = run_action(staff, "issue_jwt_access_tokens", [server, no_uri, app])
    assert refreshed(server).token_format == "jwt"
    assert refreshed(no_uri).token_format == "opaque" and refreshed(app).token_format == "opaque"
    said = " ".join(messages_of(response))
    assert "need a resource URI" in said and "Only a resource server has a token format" in said
    assert "Changed 1 resource server." in said
    run_action(staff, "issue_opaque_access_tokens", [server])
    assert refreshed(server).token_format == "opaque"


def test_the_admins_add_form_takes_the_token_format(staff, reviewer):
    response = staff.post(
        reverse("admin:oauthclients_oauthclient_add"),
        {
            "owner": reviewer.pk,
            "name": "Rooms",
            "client_type": "resource_server",
            "resource_uri": "https://rooms.example.com/v2",
            "token_format": "jwt",
        },
    )
    assert response.status_code == 200, response.content[:300]
    assert OAuthClient.objects.get(name="Rooms").token_format == "jwt"
    refused = staff.post(
        reverse("admin:oauthclients_oauthclient_add"),
        {"owner": reviewer.pk, "name": "Halls", "client_type": "resource_server", "token_format": "jwt"},
    )
    assert b"need a resource URI" in refused.content and not OAuthClient.objects.filter(name="Halls").exists()


def test_the_add_page_is_the_services_form_with_the_owner_lookup(staff):
    add = reverse("admin:oauthclients_oauthclient_add")
    assert add in staff.get(reverse("admin:oauthclients_oauthclient_changelist")).content.decode()
    response = staff.get(add)
    page = response.content.decode()
    assert response.status_code == 200 and isinstance(response.context["form"], ClientAddForm)
    assert 'id="id_owner"' in page and 'class="related-lookup"' in page and "RelatedObjectLookups" in page
    form = page.split('id="oauthclient_form"')[1].split("</form>")[0]
    assert form.count('type="submit"') == 1  # every way out is the one-time secret page
