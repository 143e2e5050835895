"""The base class for every /v2 resource endpoint."""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from scopes.authentication import BearerTokenAuthentication
from scopes.catalog import catalog_document
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


class ScopeCatalogApi(ScopedApiView):
    """GET /v2/scopes: the scope catalog as data (scopes/catalog.json), public and cacheable, so a
    service in any language enforces the same rules (docs/verifying-tokens.md)."""

    public_endpoint = True

    @extend_schema(
        summary="The scope catalog",
        tags=["Scopes"],
        auth=[],
        responses={
            200: OpenApiResponse(
                response=inline_serializer(
                    "ScopeCatalog",
                    {
                        "scopes": serializers.ListField(
                            child=inline_serializer(
                                "CatalogScope",
                                {
                                    "name": serializers.CharField(),
                                    "description": serializers.CharField(),
                                    "level": serializers.ChoiceField(choices=["personal", "team", "organization"]),
                                    "resource": serializers.CharField(),
                                    "access": serializers.ChoiceField(choices=["read", "write"]),
                                },
                            )
                        ),
                        "rules": serializers.DictField(),
                    },
                ),
                description="The 46 scopes and the rules a resource server applies (docs/verifying-tokens.md).",
            )
        },
    )
    def get(self, request, *args, **kwargs):
        """Public and cacheable: the same document as scopes/catalog.json in the `scopes` package."""
        response = Response(catalog_document())
        response["Cache-Control"] = "public, max-age=3600"
        return response
