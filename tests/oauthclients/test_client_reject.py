import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from oauthclients import services
from oauthclients.exceptions import InvalidTransition
from oauthclients.grants import grants_end
from oauthclients.models import AuditAction, ClientStatus, RefreshToken
from oauthflows.pages.selectors import connected_app_list_for_user
from tests.factories import make_client
from tests.oauthclients.service_helpers import (
    AuditWriteFailed,
    assert_audited,
    audit_actions,
    audit_events,
    break_audit,
    reject,
    stored,
)
from tests.oauthflows.helpers import assert_tokens, exchange, get_code, me, refresh
from tests.oauthflows.test_token import assert_token_error
from tokens.models import Consent


@pytest.mark.parametrize("start", ["pending", "approved"])
def test_it_rejects_a_pending_or_approved_client_with_a_reason(owner, reviewer, start):
    client = make_client(owner, approve=start == "approved").client
    since = timezone.now()
    services.client_reject(client=client, actor=reviewer, reason="  Phishing site.  ")
    client = stored(client)
    assert client.status == ClientStatus.REJECTED
    assert client.rejection_reason == "Phishing site."
    assert client.reviewed_by == reviewer
    assert since <= client.reviewed_at <= timezone.now()
    event = audit_events(client)[-1]
    assert_audited(event, client=client, actor=reviewer, action=AuditAction.CLIENT_REJECTED, since=since)
    assert event.detail == {
        "reason": "Phishing site.",
        "previous": start,
        "revoked_access_tokens": 0,
        "revoked_refresh_tokens": 0,
        "revoked_codes": 0,
    }


@pytest.mark.parametrize("reason", ["", "   \n", None])
def test_it_refuses_to_reject_without_a_reason(approved, reviewer, reason):
    with pytest.raises(ValidationError) as exc_info:
        services.client_reject(client=approved.client, actor=reviewer, reason=reason)
    assert list(exc_info.value.message_dict) == ["reason"]
    assert stored(approved.client).status == ClientStatus.APPROVED


@pytest.mark.parametrize("reason", ["x" * 2001, "Spam\x00"])
def test_it_refuses_an_overlong_or_nul_reason(client_obj, reviewer, reason):
    # PostgreSQL cannot store NUL in text: a ValidationError, not a DataError on save.
    with pytest.raises(ValidationError) as exc_info:
        services.client_reject(client=client_obj, actor=reviewer, reason=reason)
    assert list(exc_info.value.message_dict) == ["reason"]
    assert stored(client_obj).status == ClientStatus.PENDING


def test_it_refuses_to_reject_a_rejected_client(client_obj, reviewer):
    rejected = reject(client_obj, reviewer)
    before = audit_actions(rejected)
    with pytest.raises(InvalidTransition):
        services.client_reject(client=rejected, actor=reviewer, reason="Another reason.")
    assert stored(rejected).rejection_reason == "The website does not load."
    assert audit_actions(rejected) == before


def test_it_stays_approved_when_the_audit_write_fails(approved, reviewer, owner, monkeypatch):
    break_audit(monkeypatch)
    with pytest.raises(AuditWriteFailed):
        services.client_reject(client=approved.client, actor=reviewer, reason="Phishing site.")
    client = stored(approved.client)
    assert (client.status, client.rejection_reason, client.reviewed_by) == (ClientStatus.APPROVED, "", owner)


def _update(client, owner, **changes):
    fields = {
        "name": client.name,
        "purpose": client.purpose,
        "website_url": client.website_url,
        "redirect_uris": client.redirect_uri_list,
        "scopes": client.scope_list,
    }
    fields.update(changes)
    return services.client_update(client=client, actor=owner, **fields)


def test_rejecting_ends_every_grant_for_good(browser, api, confidential, owner, reviewer, end_user):
    client, secret = confidential
    tokens = assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
    unexchanged = get_code(browser, client)
    assert [app.client for app in connected_app_list_for_user(user=end_user)] == [client]

    services.client_reject(client=client, actor=reviewer, reason="Abuse")
    client = _update(stored(client), owner, name="Renamed")  # rejected -> pending
    services.client_approve(client=client, actor=reviewer)

    assert me(api, tokens["access_token"]).status_code == 401
    assert_token_error(refresh(api, client, tokens["refresh_token"], secret=secret), "invalid_grant")
    assert_token_error(exchange(api, client, unexchanged, secret=secret), "invalid_grant")
    assert connected_app_list_for_user(user=end_user) == []
    assert not Consent.objects.filter(client=client).exists()
    detail = next(e.detail for e in audit_events(client) if e.action == AuditAction.CLIENT_REJECTED)
    assert detail["revoked_access_tokens"] == 1 and detail["revoked_refresh_tokens"] == 1
    assert detail["revoked_codes"] == 1
    # The user consents again and the approved client works as before.
    assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")


def test_ending_a_clients_grants_leaves_other_clients_alone(browser, api, confidential, owner):
    client, secret = confidential
    other = make_client(owner, name="Other", redirect_uris=["https://other.example.com/cb"], approve=True)
    kept = assert_tokens(
        exchange(api, other.client, get_code(browser, other.client), secret=other.secret.plaintext), "PROFILE_READ"
    )
    ended = assert_tokens(exchange(api, client, get_code(browser, client), secret=secret), "PROFILE_READ")
    result = grants_end(client=client)
    assert (result.access_tokens, result.refresh_tokens, result.codes, result.consents) == (1, 1, 0, 1)
    assert me(api, ended["access_token"]).status_code == 401
    assert me(api, kept["access_token"]).status_code == 200
    assert RefreshToken.objects.filter(application=other.client, revoked__isnull=True).count() == 1
