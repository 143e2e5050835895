"""Every state change of a client: atomic, row-locked, audited in the same transaction.

By concern: `review` (approval bound to a digest, rejection), `clients` (a person's or an
administrator's client: created, edited, its settings, deleted), `registration` (a client that
registered itself: RFC 7591/7592, client ID metadata documents, unused registrations removed),
`secrets` (made, shown once, revoked), on `fields` (what the registry accepts of a client, its web
origins, its lock). `from oauthclients.services import X` (and `services.X`) names any service.
"""

from oauthclients.services.clients import (
    ClientCreated,
    client_create,
    client_delete,
    client_id_token_algorithm_set,
    client_name_skeletons_refresh,
    client_set_scopes,
    client_update,
    resource_server_create,
    resource_server_token_format_set,
)
from oauthclients.services.fields import LOOKALIKE_URL, MAX_NAME_LENGTH, MAX_PURPOSE_LENGTH, PURPOSE_REQUIRED
from oauthclients.services.registration import (
    RegistrationTokenIssued,
    RegistrationUpdated,
    client_document_refresh,
    client_registration_delete,
    client_registration_token_issue,
    client_registration_update,
    client_self_register,
    self_registered_owner,
    unused_registrations_remove,
)
from oauthclients.services.review import MAX_REJECTION_REASON_LENGTH, client_approve, client_reject
from oauthclients.services.secrets import (
    MAX_ACTIVE_SECRETS,
    SECRET_HINT_LENGTH,
    SECRET_PREFIX,
    IssuedSecret,
    client_secret_create,
    client_secret_revoke,
)

__all__ = [
    "ClientCreated",
    "IssuedSecret",
    "LOOKALIKE_URL",
    "MAX_ACTIVE_SECRETS",
    "MAX_NAME_LENGTH",
    "MAX_PURPOSE_LENGTH",
    "MAX_REJECTION_REASON_LENGTH",
    "PURPOSE_REQUIRED",
    "RegistrationTokenIssued",
    "RegistrationUpdated",
    "SECRET_HINT_LENGTH",
    "SECRET_PREFIX",
    "client_approve",
    "client_create",
    "client_delete",
    "client_document_refresh",
    "client_id_token_algorithm_set",
    "client_name_skeletons_refresh",
    "client_registration_delete",
    "client_registration_token_issue",
    "client_registration_update",
    "client_reject",
    "client_secret_create",
    "client_secret_revoke",
    "client_self_register",
    "client_set_scopes",
    "client_update",
    "resource_server_create",
    "resource_server_token_format_set",
    "self_registered_owner",
    "unused_registrations_remove",
]
