"""A deactivated user's codes, tokens and grants end at deactivation (red-team finding 7; SECURITY.md).

Runs on SQLite and on PostgreSQL, where codes and refresh tokens are redeemed by the one-statement
claims (tokens.redemption): both paths must refuse.
"""

import pytest
from django.contrib.auth import get_user_model

from oauthclients.models import AccessToken, AuditAction, ClientAuditEvent, Grant, RefreshToken
from tests.factories import make_client, make_tokens
from tests.oauthflows.helpers import ME, exchange, get_code, pkce_pair, refresh
from tokens.models import Consent
from tokens.services import user_access_end

pytestmark = pytest.mark.django_db


def deactivate(user):
    user.is_active = False
    user.save()


def reactivate(user):
    user.is_active = True
    user.save()


def bearer(api, access_token: str):
    return api.get(ME, HTTP_AUTHORIZATION=f"Bearer {access_token}")


def test_a_code_issued_before_deactivation_is_not_exchanged(browser, api, confidential, end_user):
    client, secret = confidential
    code = get_code(browser, client)
    # A bulk update sends no signal, so the code itself is still unused: the exchange must refuse it.
    get_user_model().objects.filter(pk=end_user.pk).update(is_active=False)

    response = exchange(api, client, code, secret=secret)

    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.filter(user=end_user).exists()


def test_a_public_clients_code_with_pkce_is_refused_too(browser, api, public, end_user):
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge, code_challenge_method="S256")
    get_user_model().objects.filter(pk=end_user.pk).update(is_active=False)

    response = exchange(api, public, code, verifier=verifier)

    assert response.json()["error"] == "invalid_grant"


def test_an_inactive_users_refresh_token_is_refused(browser, api, confidential, end_user):
    client, secret = confidential
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    get_user_model().objects.filter(pk=end_user.pk).update(is_active=False)

    response = refresh(api, client, tokens["refresh_token"], secret=secret)

    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"


def test_deactivation_ends_every_code_token_and_consent_and_is_audited(browser, api, confidential, end_user, owner):
    client, secret = confidential
    other = make_client(owner, name="Second App", approve=True).client
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    pending_code = get_code(browser, client)
    other_access, _other_refresh = make_tokens(end_user, other)
    assert bearer(api, tokens["access_token"]).status_code == 200

    deactivate(end_user)

    assert not AccessToken.objects.filter(user=end_user).exists()
    assert not RefreshToken.objects.filter(user=end_user, revoked__isnull=True).exists()
    assert not Grant.objects.filter(user=end_user, used_at__isnull=True).exists()
    assert not Consent.objects.filter(user=end_user).exists()
    events = ClientAuditEvent.objects.filter(user=end_user, action=AuditAction.USER_DEACTIVATED)
    assert {event.client_id for event in events} == {client.pk, other.pk}
    mine = events.get(client=client)
    assert mine.detail == {"revoked_refresh_tokens": 1, "revoked_access_tokens": 1, "revoked_codes": 1}
    assert "was deactivated" in mine.sentence()

    # Reactivation brings nothing back: the old tokens and the old code stay dead.
    reactivate(end_user)
    assert bearer(api, tokens["access_token"]).status_code == 401
    assert bearer(api, other_access).status_code == 401
    assert refresh(api, client, tokens["refresh_token"], secret=secret).json()["error"] == "invalid_grant"
    assert exchange(api, client, pending_code, secret=secret).json()["error"] == "invalid_grant"


def test_saving_an_active_user_or_logging_in_ends_nothing(browser, api, confidential, end_user):
    client, secret = confidential
    tokens = exchange(api, client, get_code(browser, client), secret=secret).json()
    end_user.first_name = "Renamed"
    end_user.save()
    end_user.save(update_fields=["last_login"])
    assert bearer(api, tokens["access_token"]).status_code == 200
    assert not ClientAuditEvent.objects.filter(action=AuditAction.USER_DEACTIVATED).exists()


def test_the_service_can_be_called_directly_for_a_bulk_deactivation(confidential, end_user, reviewer):
    client, _ = confidential
    make_tokens(end_user, client)
    ended = user_access_end(user=end_user, actor=reviewer)
    assert (ended.access_tokens, ended.refresh_tokens) == (1, 1)
    assert ClientAuditEvent.objects.get(action=AuditAction.USER_DEACTIVATED).actor == reviewer


# --- RFC 7636 §4.1: a verifier is 43-128 characters of the unreserved set, all of it ---


def test_a_verifier_ending_in_a_newline_is_refused(browser, api, public):
    verifier, challenge = pkce_pair()
    code = get_code(browser, public, code_challenge=challenge, code_challenge_method="S256")

    response = exchange(api, public, code, verifier=verifier + "\n")

    assert response.status_code == 400 and response.json()["error"] in {"invalid_request", "invalid_grant"}
    assert not AccessToken.objects.exists()


def test_a_challenge_ending_in_a_newline_is_refused(browser, public):
    _verifier, challenge = pkce_pair()
    page = browser.get(
        "/auth/oauth2/authorize?"
        + f"client_id={public.client_id}&redirect_uri={public.redirect_uri_list[0]}&response_type=code"
        + f"&scope=PROFILE_READ&code_challenge={challenge}%0A&code_challenge_method=S256"
    )
    assert page.status_code == 302 and "error=invalid_request" in page["Location"]
