"""The audit trail as sentences: scope names as they are written, field names as words."""

import pytest

from oauthclients.models import AuditAction, ClientAuditEvent

pytestmark = pytest.mark.django_db


def test_scope_names_keep_their_underscores(approved):
    event = ClientAuditEvent(
        client=approved.client,
        action=AuditAction.CLIENT_SCOPES_SET,
        detail={"scopes": ["BOOKING_READ", "PROFILE_READ"]},
    )
    assert event.sentence() == "The system set the scopes to BOOKING_READ, PROFILE_READ."


def test_field_names_read_as_words(approved):
    event = ClientAuditEvent(
        client=approved.client, action=AuditAction.CLIENT_UPDATED, detail={"changed": ["website_url", "name"]}
    )
    assert event.sentence() == "The system edited website url, name."


def test_a_sentence_is_in_the_administrators_language_with_names_and_scopes_as_they_are(approved):
    from django.utils import translation

    event = ClientAuditEvent(
        client=approved.client, action=AuditAction.CLIENT_SCOPES_SET, detail={"scopes": ["BOOKING_READ"]}
    )
    with translation.override("de"):
        assert event.sentence() == "Das System hat die Scopes auf BOOKING_READ gesetzt."
    assert event.sentence() == "The system set the scopes to BOOKING_READ."


@pytest.mark.parametrize(
    ("language", "expected"),
    [("en", "(confidential)"), ("de", "(vertraulich)"), ("ar", "(سرّي)"), ("ja", "（コンフィデンシャル）")],
)
def test_the_registered_kind_is_a_word_of_the_readers_language(approved, language, expected):
    from django.utils import translation

    event = ClientAuditEvent(
        client=approved.client,
        action=AuditAction.CLIENT_CREATED,
        detail={"kind": "confidential", "scopes": ["BOOKING_READ"]},
    )
    with translation.override(language):
        sentence = event.sentence()
    assert expected in sentence
    assert language == "en" or "confidential" not in sentence


def test_a_kind_this_version_does_not_know_is_shown_as_stored(approved):
    event = ClientAuditEvent(
        client=approved.client, action=AuditAction.CLIENT_CREATED, detail={"kind": "future_kind", "scopes": []}
    )
    assert "(future_kind)" in event.sentence()
