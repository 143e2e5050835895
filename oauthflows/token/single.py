"""The grants that issue one access token and no refresh token: RFC 8693 token exchange
(oauthflows.token.exchange) and RFC 7523 with an ID-JAG (oauthflows.token.idjag). Each validates
its request into its typed state (oauthflows.grants.SingleTokenState); from there they issue alike:
the token generator (opaque or JWT, oauthflows.token.oauth2.generate_access_token), the one writer
of token rows with the state's lineage (tokens.services.access_token_issue), and the one answer
(oauthflows.grants.token_response, at the endpoint)."""

import json
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from oauthlib.oauth2.rfc6749 import errors
from oauthlib.oauth2.rfc6749.grant_types.base import GrantTypeBase

from oauthclients.models import AccessToken
from oauthflows.grants import SingleTokenState, grant_state
from oauthflows.token.clientcall import issued_tell
from tokens.services import access_token_issue


class SingleTokenGrant(GrantTypeBase):
    """An oauthlib grant whose `validate_token_request` sets `request.grant_state` to a `state`."""

    state: type[SingleTokenState] = SingleTokenState

    def validate_token_request(self, request) -> None:
        raise NotImplementedError

    def issued(self, access: AccessToken, request, state: SingleTokenState) -> None:
        """What the grant records beside the token row, in its transaction (nothing by default)."""

    def create_token_response(self, request, token_handler):
        headers = self._get_default_headers()
        try:
            self.validate_token_request(request)
        except errors.OAuth2Error as exc:
            headers.update(exc.headers)
            return headers, exc.json, exc.status_code
        state = grant_state(request, self.state)
        request.expires_in = state.lifetime
        value = token_handler.token_generator(request)
        scope = " ".join(request.scopes)
        with transaction.atomic(savepoint=False):
            access = access_token_issue(
                value=value,
                user=request.user,
                client=request.client,
                scope=scope,
                expires=timezone.now() + timedelta(seconds=state.lifetime),
                resource=list(request.resource),
                lineage=state.lineage,
                jwt_status=state.jwt_status,
                act=state.act,
            )
            self.issued(access, request, state)
        issued_tell(access)
        # token_type and the rest of the answer: oauthflows.grants.token_response, at the endpoint.
        return headers, json.dumps({"access_token": value, "expires_in": state.lifetime, "scope": scope}), 200
