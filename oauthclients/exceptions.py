"""One error hierarchy for the domain; views and the command turn it into their own shapes."""


class ApplicationError(Exception):
    """A request the domain refuses, with a message fit to show the person who made it."""

    def __init__(self, message: str, *, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class InvalidTransition(ApplicationError):
    """A review-state move that is not allowed from the current state."""


class ReviewOutdated(InvalidTransition):
    """The client changed after the reviewer looked at it: approving would approve something unseen."""


class SecretLimitReached(ApplicationError):
    """A third active secret was asked for."""


class LastSecretError(ApplicationError):
    """The last active secret of a confidential client cannot be revoked."""


class SecretNotFound(ApplicationError):
    """No such secret on this client (or it is already revoked)."""


class ClientKindError(ApplicationError):
    """The operation does not apply to this kind of client (e.g. secrets on a public client)."""
