"""The floor: plain Django views doing each scenario's unavoidable database work and nothing else.

They run in the project's own server process, behind the same middleware, on the same tables,
so the gap between a scenario and its floor is what the project adds on top of the database work
(DRF, oauthlib and django-oauth-toolkit, validation, scope checks, error handling). They are
deliberately naive about everything but the database: minimal parsing, no error detail, no
scope checks, no replay detection. Bench-only code, mounted under /floor/ by bench.urls.

Per scenario, the statements are:

1. `GET /floor/me`: one indexed SELECT of the access token joined to its user.
2. `POST /floor/token` (refresh_token), one transaction: the client secret SELECT (client
   authentication cannot be skipped by a token endpoint), the claim of the presented refresh
   token (one statement: lock, revoke, delete its access token; tokens.redemption, the
   project's own), the INSERTs of the new access and refresh token.
3. `POST /floor/token` (authorization_code), one transaction: the client secret SELECT, the
   code's claim (one UPDATE ... RETURNING, the project's own), the INSERTs of the access and
   refresh token.

On SQLite the claims find nothing (they are PostgreSQL statements): the floor's token views
answer invalid_grant there; the bench runs on PostgreSQL.
4. `GET /floor/authorize` (session, user and client SELECTs, a page with a CSRF token),
   `POST /floor/authorize/allow` (the same SELECTs and the INSERT of the code), then 3.
5. `POST /floor/introspect` (a resource server, HTTP Basic): the client secret SELECT, then one
   indexed SELECT of the access token joined to its client and user; RFC 7662 claims.

The framework floor: `GET /floor/empty`, a Django view returning a small JSON body, and
`GET /floor/empty-drf`, a DRF APIView (no authentication, no permission, JSON renderer) returning
the same body. Neither touches the database: they are the cost of serving any request at all
behind this middleware, the part no endpoint can go below.
"""

import secrets
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.db import transaction
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse
from django.middleware.csrf import get_token
from django.urls import path
from django.utils import timezone
from django.utils.html import escape
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from bench.common import me_payload
from oauthclients.models import AccessToken, ClientSecret, ClientStatus, Grant, OAuthClient, RefreshToken, digest
from plumbing.requestparams import basic_credentials
from tokens.redemption import grant_claim, refresh_token_claim

ACCESS_TOKEN_LIFETIME = timedelta(seconds=1800)


def _error(status: int, error: str) -> JsonResponse:
    return JsonResponse({"error": error}, status=status)


@require_GET
def me(request):
    """Scenario 1: one indexed SELECT of the token joined to the user."""
    scheme, _, raw = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "bearer" or not raw:
        return _error(401, "invalid_token")
    token = AccessToken.objects.select_related("user").filter(token_checksum=digest(raw)).first()
    if token is None or token.expires <= timezone.now() or token.user is None:
        return _error(401, "invalid_token")
    return JsonResponse(me_payload(token.user))


def _issue_pair(*, user_id, client_pk, scope, family, source_refresh_token_id=None) -> dict:
    access_value, refresh_value = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    access = AccessToken.objects.create(
        user_id=user_id,
        application_id=client_pk,
        scope=scope,
        token="",
        token_checksum=digest(access_value),
        expires=timezone.now() + ACCESS_TOKEN_LIFETIME,
        source_refresh_token_id=source_refresh_token_id,
    )
    RefreshToken.objects.create(
        user_id=user_id,
        application_id=client_pk,
        token="",
        token_checksum=digest(refresh_value),
        access_token=access,
        token_family=family,
    )
    return {
        "access_token": access_value,
        "refresh_token": refresh_value,
        "token_type": "bearer",
        "expires_in": int(ACCESS_TOKEN_LIFETIME.total_seconds()),
        "scope": scope,
    }


def _exchange_code(params, client_pk) -> dict | None:
    # The project's own one-statement claim (tokens.redemption): the same database work.
    claimed = grant_claim(
        code=params.get("code", ""),
        client_pk=client_pk,
        redirect_uri=params.get("redirect_uri", ""),
        verifier=None,
        now=timezone.now(),
    )
    if claimed is None:
        return None
    grant, family = claimed
    return _issue_pair(user_id=grant.user_id, client_pk=client_pk, scope=grant.scope, family=family)


def _rotate_refresh(params, client_pk) -> dict | None:
    # The project's own one-statement claim: revoke the token and delete its access token.
    now = timezone.now()
    old = refresh_token_claim(
        raw=params.get("refresh_token", ""),
        client_pk=client_pk,
        now=now,
        alive_after=now - timedelta(seconds=settings.OAUTH_REFRESH_TOKEN_LIFETIME),
    )
    if old is None:
        return None
    return _issue_pair(
        user_id=old.user_id,
        client_pk=client_pk,
        scope=old.access_token.scope,
        family=old.token_family,
        source_refresh_token_id=old.pk,
    )


@csrf_exempt
@require_POST
def token(request):
    """Scenarios 2 and 3: client authentication and a token pair, in one transaction."""
    params = request.POST
    grant_type = params.get("grant_type")
    if grant_type not in ("authorization_code", "refresh_token"):
        return _error(400, "unsupported_grant_type")
    with transaction.atomic():
        client_pk = (
            ClientSecret.objects.filter(
                digest=digest(params.get("client_secret", "")),
                revoked_at__isnull=True,
                client__client_id=params.get("client_id", ""),
                client__status=ClientStatus.APPROVED,
            )
            .values_list("client_id", flat=True)
            .first()
        )
        if client_pk is None:
            return _error(401, "invalid_client")
        issued = (_exchange_code if grant_type == "authorization_code" else _rotate_refresh)(params, client_pk)
    if issued is None:
        return _error(400, "invalid_grant")
    response = JsonResponse(issued)
    response["Cache-Control"] = "no-store"
    return response


@csrf_exempt
@require_POST
def introspect(request):
    """Scenario 5: the resource server's secret, then the token joined to its client and user."""
    scheme, _, encoded = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    credentials = basic_credentials(encoded.strip()) if scheme.lower() == "basic" else None
    if (
        credentials is None
        or not ClientSecret.objects.filter(
            digest=digest(credentials[1]),
            revoked_at__isnull=True,
            client__client_id=credentials[0],
            client__status=ClientStatus.APPROVED,
        ).exists()
    ):
        return _error(401, "invalid_client")
    token = (
        AccessToken.objects.filter(token_checksum=digest(request.POST.get("token", "")))
        .values("scope", "expires", "created", "user_id", "user__username", "application__client_id")
        .first()
    )
    if token is None or token["expires"] <= timezone.now():
        response = JsonResponse({"active": False})
    else:
        response = JsonResponse(
            {
                "active": True,
                "scope": token["scope"],
                "client_id": token["application__client_id"],
                "username": token["user__username"],
                "sub": str(token["user_id"]),
                "exp": int(token["expires"].timestamp()),
                "iat": int(token["created"].timestamp()),
                "iss": settings.OAUTH_ISSUER,
                "token_type": "Bearer",
            }
        )
    response["Cache-Control"] = "no-store"
    return response


def _authorization_client(request):
    """The logged-in user's view of the client named in the query, or None."""
    return (
        OAuthClient.objects.filter(client_id=request.GET.get("client_id", ""), status=ClientStatus.APPROVED)
        .only("pk", "name", "redirect_uris")
        .first()
    )


@require_GET
def authorize(request):
    """Scenario 4, step 1: the session's user, the client, and a page with the CSRF token."""
    if not request.user.is_authenticated:
        return HttpResponseRedirect(settings.LOGIN_URL)
    client = _authorization_client(request)
    if client is None or request.GET.get("redirect_uri") not in client.redirect_uri_list:
        return HttpResponse("Unknown client or redirect URI.", status=400)
    action = escape("/floor/authorize/allow?" + request.META.get("QUERY_STRING", ""))
    return HttpResponse(
        f'<!doctype html><title>Allow {escape(client.name)}?</title><form method="post" action="{action}">'
        f'<input type="hidden" name="csrfmiddlewaretoken" value="{get_token(request)}">'
        f"<button>Allow</button></form>"
    )


@require_POST
def authorize_allow(request):
    """Scenario 4, step 2 (CSRF-checked by the middleware): the same SELECTs and the code INSERT."""
    if not request.user.is_authenticated:
        return HttpResponseRedirect(settings.LOGIN_URL)
    client = _authorization_client(request)
    redirect_uri = request.GET.get("redirect_uri")
    if client is None or redirect_uri not in client.redirect_uri_list:
        return HttpResponse("Unknown client or redirect URI.", status=400)
    code = secrets.token_urlsafe(32)
    Grant.objects.create(
        application=client,
        user=request.user,
        code=digest(code),
        redirect_uri=redirect_uri,
        scope=request.GET.get("scope", ""),
        expires=timezone.now() + timedelta(seconds=60),
    )
    return HttpResponseRedirect(redirect_uri + "?" + urlencode({"code": code, "state": request.GET.get("state", "")}))


EMPTY_BODY = {"status": "success"}


@require_GET
def empty(request):
    """The framework floor: a Django view, no database."""
    return JsonResponse(EMPTY_BODY)


class EmptyApi(APIView):
    """The framework floor: a DRF view, no authentication or permission, no database."""

    authentication_classes = ()
    permission_classes = ()
    renderer_classes = (JSONRenderer,)

    def get(self, request):
        return Response(EMPTY_BODY)


urlpatterns = [
    path("empty", empty, name="floor_empty"),
    path("empty-drf", EmptyApi.as_view(), name="floor_empty_drf"),
    path("me", me, name="floor_me"),
    path("token", token, name="floor_token"),
    path("authorize", authorize, name="floor_authorize"),
    path("authorize/allow", authorize_allow, name="floor_authorize_allow"),
    path("introspect", introspect, name="floor_introspect"),
]
