"""oauthclients.grants.grants_end: the one rule that ends grants, for a client, a user, or both."""

import pytest
from django.utils import timezone

from oauthclients.grants import grants_end
from oauthclients.models import AccessToken, Grant, RefreshToken
from tests.factories import make_client, make_user
from tests.oauthflows.helpers import get_code
from tokens.models import Consent

pytestmark = pytest.mark.django_db


def _grant_everything(user, client, *, when):
    """A live token pair, an unexchanged code and a consent of `user` with `client`."""
    access = AccessToken.objects.create(
        user=user, application=client, token=f"a-{user.pk}-{client.pk}", expires=when, scope="PROFILE_READ"
    )
    RefreshToken.objects.create(user=user, application=client, token=f"r-{user.pk}-{client.pk}", access_token=access)
    Grant.objects.create(
        user=user,
        application=client,
        code=f"c-{user.pk}-{client.pk}",
        expires=when,
        redirect_uri=client.redirect_uri_list[0],
        scope="PROFILE_READ",
    )
    Consent.objects.create(user=user, client=client, scope="PROFILE_READ")


@pytest.fixture
def two_apps_two_users(owner):
    when = timezone.now() + timezone.timedelta(minutes=5)
    first = make_client(owner, approve=True).client
    second = make_client(owner, name="Second", redirect_uris=["https://second.example.com/cb"], approve=True).client
    alice, bob = make_user("alice"), make_user("bob")
    for user in (alice, bob):
        for client in (first, second):
            _grant_everything(user, client, when=when)
    return first, second, alice, bob


def _live(**of):
    consent_of = {("client" if k == "application" else k): v for k, v in of.items()}
    return (
        AccessToken.objects.filter(**of).count(),
        RefreshToken.objects.filter(revoked__isnull=True, **of).count(),
        Grant.objects.filter(used_at__isnull=True, **of).count(),
        Consent.objects.filter(**consent_of).count(),
    )


def test_a_clients_grants_end_for_every_user_and_no_other_client(two_apps_two_users):
    first, second, alice, bob = two_apps_two_users
    ended = grants_end(client=first)
    assert (ended.access_tokens, ended.refresh_tokens, ended.codes, ended.consents) == (2, 2, 2, 2)
    assert _live(application=first) == (0, 0, 0, 0)
    assert _live(application=second) == (2, 2, 2, 2)


def test_a_users_grants_end_with_every_client_and_no_other_user(two_apps_two_users):
    first, second, alice, bob = two_apps_two_users
    ended = grants_end(user=alice)
    assert (ended.access_tokens, ended.refresh_tokens, ended.codes, ended.consents) == (2, 2, 2, 2)
    assert _live(user=alice) == (0, 0, 0, 0)
    assert _live(user=bob) == (2, 2, 2, 2)


def test_one_users_grants_with_one_client_end_alone(two_apps_two_users):
    first, second, alice, bob = two_apps_two_users
    ended = grants_end(user=alice, client=first)
    assert (ended.access_tokens, ended.refresh_tokens, ended.codes, ended.consents) == (1, 1, 1, 1)
    assert _live(user=alice, application=first) == (0, 0, 0, 0)
    assert _live(user=alice, application=second) == (1, 1, 1, 1)
    assert _live(user=bob) == (2, 2, 2, 2)


def test_every_ended_row_is_marked_updated_codes_included(two_apps_two_users):
    first, _second, alice, _bob = two_apps_two_users
    before = timezone.now()
    grants_end(user=alice, client=first)
    assert Grant.objects.get(user=alice, application=first).updated >= before
    refresh = RefreshToken.objects.get(user=alice, application=first)
    assert refresh.updated >= before and refresh.access_token_id is None


def test_it_refuses_to_end_everything_when_named_nothing(db):
    with pytest.raises(ValueError):
        grants_end()


def test_connected_apps_revoke_goes_through_it(browser, approved, end_user):
    """The user's own revoke ends what grants_end ends (codes marked too), and nothing else."""
    from oauthflows.pages.services import connected_app_revoke

    get_code(browser, approved.client)
    connected_app_revoke(user=end_user, client=approved.client)
    assert _live(user=end_user, application=approved.client) == (0, 0, 0, 0)
