"""Which resource server may exchange users' tokens toward which other ones (RFC 8693,
oauthflows.token.exchange): an administrator's decision, one audited service, one selector."""

from django.db import transaction

from oauthclients.audit import audit_record
from oauthclients.exceptions import ApplicationError, ClientKindError
from oauthclients.models import AuditAction, ClientKind, ExchangeTarget, OAuthClient
from oauthclients.policy import client_serves_q


class UnknownExchangeTarget(ApplicationError):
    """A resource URI that names no approved resource server."""


def _resource_servers(uris: list[str]) -> dict[str, OAuthClient]:
    return {
        server.resource_uri: server
        for server in OAuthClient.objects.filter(
            client_serves_q(),
            client_type=ClientKind.RESOURCE_SERVER,
            resource_uri__in=uris,
        )
    }


@transaction.atomic
def client_exchange_targets_set(*, client: OAuthClient, resource_uris: list[str], actor=None) -> OAuthClient:
    """Replace the downstream resource servers `client` (a resource server) may exchange toward."""
    client = OAuthClient.objects.select_for_update().get(pk=client.pk)
    if client.client_type != ClientKind.RESOURCE_SERVER:
        raise ClientKindError("Only a resource server exchanges tokens (RFC 8693): it calls other services for users.")
    uris = list(dict.fromkeys(resource_uris))
    found = _resource_servers(uris)
    unknown = [uri for uri in uris if uri not in found]
    if unknown:
        raise UnknownExchangeTarget(
            "No approved resource server has the resource URI " + ", ".join(repr(uri) for uri in unknown) + "."
        )
    if client.resource_uri in found:
        raise UnknownExchangeTarget(
            "A resource server does not exchange toward itself: its own tokens already reach it."
        )
    before = set(ExchangeTarget.objects.filter(client=client).values_list("target__resource_uri", flat=True))
    if before != set(uris):
        ExchangeTarget.objects.filter(client=client).delete()
        ExchangeTarget.objects.bulk_create([ExchangeTarget(client=client, target=found[uri]) for uri in uris])
        audit_record(client=client, actor=actor, action=AuditAction.EXCHANGE_TARGETS_SET, targets=sorted(uris))
    return client


def exchange_target_get(*, client: OAuthClient, resource_uri: str) -> OAuthClient | None:
    """The approved, live resource server at `resource_uri` that `client` may exchange toward, or None."""
    return (
        OAuthClient.objects.filter(
            client_serves_q(),
            exchange_sources__client=client,
            client_type=ClientKind.RESOURCE_SERVER,
            resource_uri=resource_uri,
        )
        .only("pk", "client_id", "resource_uri", "name")
        .first()
    )


def exchange_target_uris(*, client: OAuthClient) -> list[str]:
    """Every resource URI `client` may exchange toward (the admin and the command show them)."""
    return sorted(ExchangeTarget.objects.filter(client=client).values_list("target__resource_uri", flat=True))
