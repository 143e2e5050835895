"""Our additions to the admin (the review queue, the client's review pages, the audit trail) speak
the administrator's language, as Django's own admin around them does; names stay as typed."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from tests.factories import PASSWORD, make_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_browser(reviewer):
    browser = Client()
    assert browser.login(username=reviewer.username, password=PASSWORD)
    get_user_model().objects.filter(pk=reviewer.pk).update(is_superuser=True)
    return browser


@pytest.mark.parametrize(
    ("language", "said", "not_said"),
    [
        (
            "de",
            ["OAuth-Client wartet auf Prüfung", "Die letzten 24 Stunden"],
            ["waiting for review", "The last 24 hours"],
        ),
        ("en", ["OAuth client waiting for review", "The last 24 hours"], ["wartet auf Prüfung"]),
    ],
)
def test_the_admin_index_queue_and_morning_view(superuser_browser, owner, language, said, not_said):
    make_client(owner, name="Calendar Sync")
    page = superuser_browser.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    for words in said:
        assert words in page
    for words in not_said:
        assert words not in page


def test_the_review_pages_are_german_with_the_name_as_typed(superuser_browser, owner):
    client = make_client(owner, name="Kalender Sync").client
    change = superuser_browser.get(
        reverse("admin:oauthclients_oauthclient_change", args=[client.pk]), HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert "Mit Begründung ablehnen" in change and "Reject with a reason" not in change
    assert "hat den Client registriert" in change  # the audit trail's sentence
    assert "Kalender Sync" in change
    approve = superuser_browser.get(
        reverse("admin:oauthclients_oauthclient_approve", args=[client.pk]), HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert (
        "Ja, Kalender Sync freigeben" in approve and "Genau hinsehen" not in approve or "Ja, Kalender Sync" in approve
    )
    assert "Once approved" not in approve and "Nach der Freigabe" in approve
