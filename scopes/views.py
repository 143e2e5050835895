"""The base class for every /v2 resource endpoint."""

from django.http import HttpResponse
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

    def initial(self, request, *args, **kwargs):
        if request.method == "OPTIONS":
            # RFC 9110 §9.3.7: OPTIONS asks what the resource supports, not for the resource, so
            # it needs no token (a 401 here would also break CORS preflights). Only negotiation.
            self.format_kwarg = self.get_format_suffix(**kwargs)
            request.accepted_renderer, request.accepted_media_type = self.perform_content_negotiation(request)
            return
        super().initial(request, *args, **kwargs)

    def options(self, request, *args, **kwargs):
        response = HttpResponse(status=204)
        response["Allow"] = ", ".join(self.allowed_methods)
        return response
