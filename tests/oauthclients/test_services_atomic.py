"""Every state change of oauthclients.services is atomic: "atomic, row-locked, audited" (its docstring);
so are grants_end and the deactivated user's end (tokens.services.user_access_end).

For each service, a dry run counts its write statements (INSERT, UPDATE, DELETE); then the service
runs again once per write, failing at that write, and every table must read as before: nothing of
the writes before the failure is left behind. Found this way: resource_server_create (the client,
its secret and three audit rows) ran outside any transaction.
"""

from collections.abc import Callable
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from oauthclients import grants, services
from oauthclients.grants import grants_end
from oauthclients.models import OAuthClient
from tests.factories import make_client
from tests.oauthflows.helpers import exchange, get_code
from tokens import services as token_services

pytestmark = pytest.mark.django_db

WRITES = ("INSERT", "UPDATE", "DELETE")


class InjectedFailure(Exception):
    """A write that fails (disk full, a lost connection, a bug), raised instead of the statement."""


@contextmanager
def writes_failing_at(number: int | None):
    """Count the write statements; raise InjectedFailure instead of running write `number`."""
    count = [0]

    def wrapper(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith(WRITES):
            count[0] += 1
            if count[0] == number:
                raise InjectedFailure(sql[:60])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield count


def every_row() -> dict[str, list[str]]:
    """Every table's rows, as sorted text: the whole database, to compare before and after."""
    quote = connection.ops.quote_name
    rows = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {quote(table)}")  # noqa: S608 - names come from introspection
            rows[table] = sorted(repr(row) for row in cursor.fetchall())
    return rows


def _fresh(client: OAuthClient) -> OAuthClient:
    return OAuthClient.objects.get(pk=client.pk)


def _with_tokens(browser, api, confidential) -> OAuthClient:
    """The confidential app with a real grant: a used code, an access and a refresh token, a consent."""
    client, secret = confidential
    assert exchange(api, client, get_code(browser, client), secret=secret).status_code == 200
    return client


# Each builder sets the scene and returns the call to make (run once dry, then once per write).
def _client_create(owner, reviewer, **_):
    return lambda: services.client_create(
        owner=owner,
        name="New App",
        purpose="Shows your bookings.",
        website_url="https://new.example.com",
        kind="confidential",
        redirect_uris=["https://new.example.com/cb"],
        scopes=["PROFILE_READ"],
        approve=True,
        actor=reviewer,
    )


def _client_self_register(**_):
    return lambda: services.client_self_register(
        name="Agent",
        kind="confidential",
        redirect_uris=["http://127.0.0.1:9000/cb"],
        scopes=["PROFILE_READ"],
        source="dcr",
    )


def _client_document_refresh(**_):
    client = services.client_self_register(
        name="Agent",
        kind="public",
        redirect_uris=["https://agent.example/cb"],
        scopes=["PROFILE_READ"],
        source=OAuthClient.RegistrationSource.CIMD,
        client_id="https://agent.example/client.json",
    ).client
    return lambda: services.client_document_refresh(
        client=_fresh(client),
        name="Agent, renamed",
        kind="public",
        redirect_uris=["https://agent.example/cb2"],
        scopes=["PROFILE_READ"],
        expires=timezone.now() + timedelta(hours=1),
    )


def _resource_server_create(owner, reviewer, **_):
    return lambda: services.resource_server_create(
        owner=owner, name="Bookings API", resource_uri="https://api.example.com/bookings", actor=reviewer
    )


def _client_update(owner, **_):
    client = make_client(owner, approve=True).client
    return lambda: services.client_update(
        client=_fresh(client),
        actor=owner,
        name="Renamed",
        purpose="Another purpose.",
        website_url=client.website_url,
        redirect_uris=client.redirect_uri_list,
        scopes=[*client.scope_list, "BOOKING_WRITE"],
    )


def _client_set_scopes(owner, reviewer, **_):
    client = make_client(owner, is_legacy=True, approve=True).client
    return lambda: services.client_set_scopes(client=_fresh(client), scopes=["PROFILE_READ"], actor=reviewer)


def _client_id_token_algorithm_set(owner, reviewer, **_):
    client = make_client(owner).client
    return lambda: services.client_id_token_algorithm_set(client=_fresh(client), algorithm="ES256", actor=reviewer)


def _resource_server_token_format_set(owner, reviewer, **_):
    server = services.resource_server_create(owner=owner, name="API", resource_uri="https://api.example.com/x").client
    return lambda: services.resource_server_token_format_set(client=_fresh(server), token_format="jwt", actor=reviewer)


def _client_approve(owner, reviewer, **_):
    client = make_client(owner).client
    return lambda: services.client_approve(client=_fresh(client), actor=reviewer)


def _client_reject(reviewer, browser, api, confidential, **_):
    client = _with_tokens(browser, api, confidential)
    return lambda: services.client_reject(client=_fresh(client), actor=reviewer, reason="Misleading name.")


def _grants_end(browser, api, confidential, **_):
    client = _with_tokens(browser, api, confidential)
    return lambda: grants_end(client=_fresh(client))


def _client_secret_create(owner, **_):
    client = make_client(owner).client
    return lambda: services.client_secret_create(client=_fresh(client), actor=owner)


def _client_secret_revoke(owner, **_):
    client = make_client(owner).client
    second = services.client_secret_create(client=client, actor=owner).secret
    return lambda: services.client_secret_revoke(client=_fresh(client), secret_id=second.pk, actor=owner)


def _client_delete(owner, browser, api, confidential, **_):
    client = _with_tokens(browser, api, confidential)
    return lambda: services.client_delete(client=_fresh(client), actor=owner)


def _user_access_end(end_user, reviewer, browser, api, confidential, **_):
    _with_tokens(browser, api, confidential)
    return lambda: token_services.user_access_end(user=end_user, actor=reviewer)


def _unused_registrations_remove(**_):
    client = services.client_self_register(
        name="Forgotten",
        kind="confidential",
        redirect_uris=["http://127.0.0.1:9000/cb"],
        scopes=["PROFILE_READ"],
        source="dcr",
    ).client
    OAuthClient.objects.filter(pk=client.pk).update(created=timezone.now() - timedelta(days=365))
    return lambda: services.unused_registrations_remove()


def _registered_approved(reviewer):
    client = services.client_self_register(
        name="Agent",
        kind="public",
        redirect_uris=["http://127.0.0.1:9000/cb"],
        scopes=["PROFILE_READ"],
        source="dcr",
        registration_token=True,
    ).client
    return services.client_approve(client=client, actor=reviewer)


def _client_registration_update(reviewer, **_):
    client = _registered_approved(reviewer)
    return lambda: services.client_registration_update(
        client=_fresh(client),
        name="Renamed agent",  # back to review: the client, its audit rows
        kind="public",
        redirect_uris=["http://127.0.0.1:9000/cb"],
        scopes=["PROFILE_READ"],
        metadata={"logo_uri": "https://agent.example/logo.png"},
    )


def _client_registration_token_issue(reviewer, **_):
    client = _registered_approved(reviewer)  # the new token's digest, the audit row
    return lambda: services.client_registration_token_issue(client=_fresh(client), actor=reviewer)


def _client_registration_delete(reviewer, browser, api, **_):
    client = _registered_approved(reviewer)
    return lambda: services.client_registration_delete(client=_fresh(client))


SERVICES: dict[str, Callable] = {
    "client_create": _client_create,
    "client_self_register": _client_self_register,
    "client_document_refresh": _client_document_refresh,
    "resource_server_create": _resource_server_create,
    "client_update": _client_update,
    "client_set_scopes": _client_set_scopes,
    "client_id_token_algorithm_set": _client_id_token_algorithm_set,
    "resource_server_token_format_set": _resource_server_token_format_set,
    "client_approve": _client_approve,
    "client_reject": _client_reject,
    "grants_end": _grants_end,
    "client_secret_create": _client_secret_create,
    "client_secret_revoke": _client_secret_revoke,
    "client_delete": _client_delete,
    "user_access_end": _user_access_end,
    "unused_registrations_remove": _unused_registrations_remove,
    "client_registration_update": _client_registration_update,
    "client_registration_delete": _client_registration_delete,
    "client_registration_token_issue": _client_registration_token_issue,
}


def test_every_atomic_service_is_listed():
    # A service added to the module with @transaction.atomic is added here too.
    import importlib
    import inspect
    import pkgutil

    modules = [
        importlib.import_module(f"{services.__name__}.{info.name}") for info in pkgutil.iter_modules(services.__path__)
    ]
    assert len(modules) >= 4  # positive control: the package's modules were found
    source = "".join(inspect.getsource(module) for module in [*modules, grants, token_services])
    decorated = {
        line.split("def ", 1)[1].split("(", 1)[0]
        for line, previous in zip(source.splitlines()[1:], source.splitlines(), strict=False)
        if previous.strip() == "@transaction.atomic" and line.startswith("def ")
    }
    assert decorated - set(SERVICES) == set()


@pytest.mark.parametrize("name", SERVICES)
def test_a_write_failing_halfway_leaves_nothing_behind(name, owner, reviewer, end_user, browser, api, confidential):
    call = SERVICES[name](
        owner=owner, reviewer=reviewer, end_user=end_user, browser=browser, api=api, confidential=confidential
    )
    before = every_row()
    with transaction.atomic(), writes_failing_at(None) as count:
        call()
        transaction.set_rollback(True)
    writes = count[0]
    assert writes >= 2, f"{name} made {writes} write(s): nothing to fail halfway"
    assert every_row() == before  # the dry run left nothing either

    for failing in range(2, writes + 1):
        with writes_failing_at(failing), pytest.raises(InjectedFailure):
            call()
        assert every_row() == before, f"{name}: write {failing} of {writes} failed and earlier writes stayed"

    call()  # and it still works, whole
    assert every_row() != before
