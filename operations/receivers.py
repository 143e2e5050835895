"""Signal receivers of the operations app (connected in OperationsConfig.ready)."""

from oauth2_provider.signals import app_authorized


def _token_issued(sender, request, token, **kwargs):
    # The access line's user id: the token's user, known here without a query.
    request.operations_user_id = token.user_id


def connect() -> None:
    app_authorized.connect(_token_issued, dispatch_uid="operations.token_issued")
