"""The owner hears about the review by email — with the reason, never with a secret."""

import pytest

from oauthclients import services
from oauthclients.emails import review_email_failures
from oauthclients.exceptions import InvalidTransition
from oauthclients.models import OAuthClient
from tests.factories import make_client


def test_approval_mails_the_owner(owner, reviewer, mailoutbox, django_capture_on_commit_callbacks):
    created = make_client(owner)
    with django_capture_on_commit_callbacks(execute=True):
        services.client_approve(client=created.client, actor=reviewer)
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == [owner.email]
    assert "approved" in mail.subject and created.client.name in mail.subject
    assert created.client.client_id in mail.body
    assert created.secret.plaintext not in mail.body and created.secret.plaintext[3:] not in mail.body


def test_rejection_mails_the_owner_with_the_reason(owner, reviewer, mailoutbox, django_capture_on_commit_callbacks):
    created = make_client(owner)
    with django_capture_on_commit_callbacks(execute=True):
        services.client_reject(client=created.client, actor=reviewer, reason="The purpose is unclear.")
    assert len(mailoutbox) == 1
    assert "rejected" in mailoutbox[0].subject
    assert "The purpose is unclear." in mailoutbox[0].body
    assert created.secret.plaintext[3:] not in mailoutbox[0].body


def test_no_mail_when_the_review_fails_or_for_other_changes(
    owner, reviewer, mailoutbox, django_capture_on_commit_callbacks
):
    created = make_client(owner)
    with django_capture_on_commit_callbacks(execute=True):
        services.client_secret_create(client=created.client, actor=owner)
    assert mailoutbox == []
    with django_capture_on_commit_callbacks(execute=True):
        services.client_reject(client=created.client, actor=reviewer, reason="No.")
    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(InvalidTransition):
        services.client_approve(client=created.client, actor=reviewer)  # rejected: refused
    assert mailoutbox == []


def test_a_mail_server_failure_does_not_undo_the_review(owner, reviewer, settings, django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 1, 1
    created = make_client(owner)
    with django_capture_on_commit_callbacks(execute=True):
        client = services.client_approve(client=created.client, actor=reviewer)
    client.refresh_from_db()
    assert client.status == "approved"


def _name_with_crlf(client):
    # A name stored before CR/LF was refused (or written around the services): Django refuses the
    # header at send time with BadHeaderError, a ValueError rather than an OSError.
    OAuthClient.objects.filter(pk=client.pk).update(name="Legacy\r\nBcc: x@example.com")


def test_a_refused_mail_header_does_not_turn_the_review_into_an_error(
    owner, reviewer, mailoutbox, caplog, django_capture_on_commit_callbacks
):
    created = make_client(owner)
    _name_with_crlf(created.client)
    with review_email_failures() as failed, django_capture_on_commit_callbacks(execute=True):
        services.client_approve(client=created.client, actor=reviewer)
    assert OAuthClient.objects.get(pk=created.client.pk).status == "approved"
    assert mailoutbox == [] and failed == [created.client.client_id]
    assert "Could not send the review email" in caplog.text


def test_without_a_listener_a_mail_failure_is_only_logged(owner, reviewer, caplog, django_capture_on_commit_callbacks):
    created = make_client(owner)
    _name_with_crlf(created.client)
    with django_capture_on_commit_callbacks(execute=True):
        services.client_reject(client=created.client, actor=reviewer, reason="No.")
    assert OAuthClient.objects.get(pk=created.client.pk).status == "rejected"
    assert "Could not send the review email" in caplog.text
