"""Rotating a confidential client's secret from its page (spec §3, §5.7)."""

from oauthclients import services
from oauthclients.models import ClientSecret, digest
from tests.factories import make_client
from tests.oauthclients.pages import shown_secret, url


def test_generating_a_second_secret_shows_it_once(client, owner, created):
    client.force_login(owner)

    response = client.post(url("client_secret_create", created.client))

    page, plaintext = shown_secret(client, response)
    assert page.content.decode().count(plaintext) == 1
    assert "no-store" in page["Cache-Control"]
    active = created.client.secrets.filter(revoked_at__isnull=True)
    assert active.count() == 2
    assert active.filter(digest=digest(plaintext)).exists()
    later = client.get(url("client_detail", created.client)).content.decode()
    assert plaintext not in later
    assert plaintext not in str(dict(client.session.items()))


def test_a_third_active_secret_is_refused_with_a_clear_message(client, owner, created):
    client.force_login(owner)
    services.client_secret_create(client=created.client, actor=owner)

    response = client.post(url("client_secret_create", created.client))

    assert response.status_code == 409
    assert "already has 2 active secrets" in response.content.decode()
    assert response.context["new_secret"] is None
    assert created.client.secrets.filter(revoked_at__isnull=True).count() == 2


def test_a_public_client_cannot_generate_a_secret(client, owner):
    client.force_login(owner)
    public = make_client(owner, kind="public").client

    response = client.post(url("client_secret_create", public))

    assert response.status_code == 409
    assert "A public client has no secrets" in response.content.decode()
    assert not public.secrets.exists()


def test_revoking_one_of_two_secrets_works(client, owner, created):
    client.force_login(owner)
    services.client_secret_create(client=created.client, actor=owner)
    old = created.secret.secret

    response = client.post(url("client_secret_revoke", created.client, old.pk))

    assert response.status_code == 303
    assert response["Location"] == url("client_detail", created.client)
    old.refresh_from_db()
    assert old.revoked_at is not None
    assert created.client.secrets.filter(revoked_at__isnull=True).count() == 1
    page = client.get(response["Location"]).content.decode()
    assert f"Secret {old.hint}… is revoked" in page
    assert url("client_secret_revoke", created.client, old.pk) not in page


def test_revoking_the_last_active_secret_is_refused(client, owner, created):
    client.force_login(owner)

    response = client.post(url("client_secret_revoke", created.client, created.secret.secret.pk))

    assert response.status_code == 409
    assert "last active secret and cannot be revoked" in response.content.decode()
    created.secret.secret.refresh_from_db()
    assert created.secret.secret.revoked_at is None


def test_revoking_another_clients_secret_is_not_found(client, owner, created):
    client.force_login(owner)
    mine_too = make_client(owner, name="Second App")
    services.client_secret_create(client=created.client, actor=owner)

    response = client.post(url("client_secret_revoke", created.client, mine_too.secret.secret.pk))

    assert response.status_code == 404
    assert ClientSecret.objects.get(pk=mine_too.secret.secret.pk).revoked_at is None
    assert created.client.secrets.filter(revoked_at__isnull=True).count() == 2


def test_each_active_secret_has_its_own_revoke_form(client, owner, created):
    client.force_login(owner)
    second = services.client_secret_create(client=created.client, actor=owner).secret

    content = client.get(url("client_detail", created.client)).content.decode()

    for secret in (created.secret.secret, second):
        assert f'action="{url("client_secret_revoke", created.client, secret.pk)}"' in content
    # Two revoke forms and log out; no "Generate" at the limit, and the page says why.
    assert content.count('method="post"') == 3
    assert url("client_secret_create", created.client) not in content
    assert "the most it can have" in content


def test_generate_is_offered_below_the_limit(client, owner, created):
    client.force_login(owner)

    content = client.get(url("client_detail", created.client)).content.decode()

    assert f'action="{url("client_secret_create", created.client)}"' in content
    assert "the most it can have" not in content
