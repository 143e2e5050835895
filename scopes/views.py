"""The base class for every /v2 resource endpoint."""

from rest_framework.views import APIView

from scopes.authentication import BearerTokenAuthentication
from scopes.parsers import JSONParser
from scopes.permissions import HasRequiredScope


class ScopedApiView(APIView):
    """Bearer-authenticated and scope-checked; declares nothing, so refuses scoped tokens.

    Bodies are JSON only; anything else is a 415.
    """

    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [HasRequiredScope]
    parser_classes = [JSONParser]
    required_scopes: dict[str, str] = {}
    scope_resource: str | None = None
    public_endpoint = False
