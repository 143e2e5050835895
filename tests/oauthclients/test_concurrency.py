"""Races that only the row lock prevents. PostgreSQL only: on SQLite every writer waits its turn.

Each thread has its own connection (Django gives one per thread), waits at a barrier so that all
of them call the service at the same moment, and closes its connection when done.
"""

import threading

import pytest
from django.db import connection

from oauthclients import services
from oauthclients.exceptions import InvalidTransition, LastSecretError, SecretLimitReached, SecretNotFound
from oauthclients.models import AuditAction, ClientSecret, ClientStatus, OAuthClient
from tests.oauthclients.service_helpers import add_second_secret, audit_actions, stored

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

THREADS = 8


def run_together(client: OAuthClient, call) -> list:
    """call(index, client) in THREADS threads released at once; each one's result or exception."""
    barrier = threading.Barrier(THREADS)
    results: list = [None] * THREADS

    def worker(index: int) -> None:
        try:
            own_copy = OAuthClient.objects.get(pk=client.pk)  # opens this thread's connection first
            barrier.wait(timeout=10)
            results[index] = call(index, own_copy)
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    if any(thread.is_alive() for thread in threads):
        pytest.fail("a thread is still running: a lock was never released")
    return results


def kinds(results) -> list[type]:
    """What each thread got, sorted by name, so that the counts can be compared as one list."""
    return sorted((type(result) for result in results), key=lambda kind: kind.__name__)


def active_count(client) -> int:
    return client.secrets.filter(revoked_at__isnull=True).count()


def test_concurrent_secret_creation_stops_at_two_active(client_obj, owner):
    results = run_together(client_obj, lambda index, client: services.client_secret_create(client=client, actor=owner))
    assert active_count(client_obj) == 2
    assert kinds(results) == [services.IssuedSecret] + [SecretLimitReached] * (THREADS - 1)
    assert audit_actions(client_obj).count(AuditAction.SECRET_CREATED) == 2


def test_concurrent_revocations_leave_one_secret_active(client_obj, owner):
    secrets = add_second_secret(client_obj, owner)
    results = run_together(
        client_obj,
        # Half the threads revoke the first secret, half the second.
        lambda index, client: services.client_secret_revoke(
            client=client, secret_id=secrets[index % 2].pk, actor=owner
        ),
    )
    assert active_count(client_obj) == 1
    refused = [result for result in results if not isinstance(result, ClientSecret)]
    assert len(refused) == THREADS - 1
    assert {type(result) for result in refused} <= {LastSecretError, SecretNotFound}
    assert audit_actions(client_obj).count(AuditAction.SECRET_REVOKED) == 1


def test_concurrent_approvals_approve_once(client_obj, reviewer):
    results = run_together(client_obj, lambda index, client: services.client_approve(client=client, actor=reviewer))
    assert stored(client_obj).status == ClientStatus.APPROVED
    assert kinds(results) == [InvalidTransition] * (THREADS - 1) + [OAuthClient]
    assert audit_actions(client_obj).count(AuditAction.CLIENT_APPROVED) == 1
