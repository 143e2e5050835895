"""django-oauth-toolkit's `app_authorized` signal fires for every exchange and refresh, as DOT's
own token view sends it, with the committed access token; never for a refused request."""

import pytest
from oauth2_provider.signals import app_authorized

from oauthclients.models import AccessToken, digest
from oauthflows.token.endpoints import TokenView
from tests.oauthflows.helpers import exchange, get_code, refresh


@pytest.fixture
def received():
    calls = []

    def receiver(sender, request, token, **kwargs):
        # Committed already: a fresh query finds it.
        calls.append((sender, token, AccessToken.objects.filter(pk=token.pk).exists()))

    app_authorized.connect(receiver)
    yield calls
    app_authorized.disconnect(receiver)


def test_app_authorized_fires_on_exchange_and_refresh(browser, api, confidential, received):
    client, secret = confidential
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    assert len(received) == 1
    sender, token, stored = received[0]
    assert sender is TokenView and stored
    assert token.token_checksum == digest(tokens["access_token"]) and token.application_id == client.pk

    renewed = refresh(api, client, tokens["refresh_token"], secret=secret).json()
    assert len(received) == 2
    assert received[1][1].token_checksum == digest(renewed["access_token"])


def test_app_authorized_does_not_fire_for_a_refused_request(browser, api, confidential, received):
    client, secret = confidential
    code = get_code(browser, client)
    assert exchange(api, client, code, secret="wrong").status_code == 401
    assert exchange(api, client, "not-a-code", secret=secret).status_code == 400
    assert exchange(api, client, code, secret=secret).status_code == 200
    assert exchange(api, client, code, secret=secret).status_code == 400  # replayed
    assert len(received) == 1
