"""The base class for every /v2 resource endpoint."""

from rest_framework.views import APIView

from scopes.authentication import BearerTokenAuthentication
from scopes.permissions import HasRequiredScope


class ScopedApiView(APIView):
    """Bearer-authenticated and scope-checked; declares nothing, so refuses scoped tokens."""

    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [HasRequiredScope]
    required_scopes: dict[str, str] = {}
    scope_resource: str | None = None
    public_endpoint = False
