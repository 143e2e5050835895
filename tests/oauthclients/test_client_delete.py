"""An owner deletes a client: confirmation, every token revoked, an audit entry kept."""

import pytest

from oauthclients import services
from oauthclients.exceptions import InvalidTransition
from oauthclients.models import AccessToken, ClientAuditEvent, ClientStatus, Grant, RefreshToken
from tests.factories import make_client
from tests.oauthclients.pages import url
from tests.oauthflows.helpers import authorize_url, exchange, get_code, me

pytestmark = pytest.mark.django_db


def test_the_page_asks_for_confirmation_first(client, owner):
    created = make_client(owner)
    client.force_login(owner)

    page = client.get(url("client_delete", created.client))

    assert page.status_code == 200
    content = page.content.decode()
    assert "cannot be undone" in content and "stops working" in content
    assert f'action="{url("client_delete", created.client)}"' in content
    created.client.refresh_from_db()
    assert created.client.deleted_at is None


def test_deleting_revokes_every_token_and_writes_an_audit_entry(client, owner, browser, api, confidential):
    app, secret = confidential
    tokens = exchange(api, app, get_code(browser, app), secret=secret).json()
    get_code(browser, app)  # a code issued and never exchanged
    client.force_login(owner)

    response = client.post(url("client_delete", app))

    assert response.status_code == 303 and response["Location"] == url("client_list")
    assert AccessToken.objects.filter(application=app).count() == 0
    assert not RefreshToken.objects.filter(application=app, revoked__isnull=True).exists()
    assert not Grant.objects.filter(application=app, used_at__isnull=True).exists()
    assert me(api, tokens["access_token"]).status_code == 401
    app.refresh_from_db()
    assert app.deleted_at is not None and app.status == ClientStatus.REJECTED
    assert not app.secrets.filter(revoked_at__isnull=True).exists()
    event = ClientAuditEvent.objects.get(client=app, action="client.deleted")
    assert event.actor == owner and event.detail["previous"] == "approved"
    assert event.detail["revoked_refresh_tokens"] == 1


def test_a_deleted_client_is_gone_from_the_owner_pages_and_cannot_authorize(client, owner, browser):
    created = make_client(owner, approve=True)
    services.client_delete(client=created.client, actor=owner)
    client.force_login(owner)

    assert created.client.name not in client.get(url("client_list")).content.decode()
    assert client.get(url("client_detail", created.client)).status_code == 404
    assert client.post(url("client_delete", created.client)).status_code == 404
    assert browser.get(authorize_url(created.client)).status_code == 400


def test_another_developer_cannot_delete_it(client, owner, other_developer):
    created = make_client(owner)
    client.force_login(other_developer)

    assert client.post(url("client_delete", created.client)).status_code == 404
    created.client.refresh_from_db()
    assert created.client.deleted_at is None


def test_deleting_twice_is_refused(owner):
    created = make_client(owner)
    services.client_delete(client=created.client, actor=owner)
    with pytest.raises(InvalidTransition):
        services.client_delete(client=created.client, actor=owner)
