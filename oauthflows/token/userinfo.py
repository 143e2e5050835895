"""OpenID Connect's UserInfo endpoint (Core §5.3): what an access token granted `openid` tells about
its user, by the scopes it holds (docs/openid-connect.md).
"""

from django.http import HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from accounts.selectors import email_is_verified
from profiles.selectors import profile_get_for_user
from scopes.bearer import MalformedBearer, request_bearer_token
from scopes.verifiers import AuthorizationServerUnavailable, audience_accepted, get_verifier

# OpenID Connect Core §5.4: which scope releases which userinfo claim (`sub` is always there).
PROFILE_CLAIMS = ("preferred_username", "name", "zoneinfo", "locale")
EMAIL_CLAIMS = ("email", "email_verified")
REALM = "userinfo"


def _bearer_error(status: int, error: str | None, description: str, *, scope: str | None = None) -> JsonResponse:
    """RFC 6750 §3: the challenge in WWW-Authenticate; the same words in the JSON body."""
    challenge = f'Bearer realm="{REALM}"'
    if error:
        challenge += f', error="{error}", error_description="{description}"'
    if scope:
        challenge += f', scope="{scope}"'
    body = {"error": error, "error_description": description} if error else {"error_description": description}
    response = JsonResponse(body, status=status)
    response["WWW-Authenticate"] = challenge
    response["Cache-Control"] = "no-store"
    return response


def userinfo_claims(*, user, scopes) -> dict:
    """OpenID Connect Core §5.3.2: `sub` always; the profile and email claims by their scopes."""
    claims = {"sub": str(user.pk)}  # the same value as introspection's `sub`
    if "profile" in scopes:
        profile = profile_get_for_user(user=user)
        claims["preferred_username"] = user.get_username()
        name = profile.name or user.get_full_name()
        if name:
            claims["name"] = name
        claims["zoneinfo"] = profile.time_zone
        claims["locale"] = profile.locale
    if "email" in scopes and user.email:
        claims["email"] = user.email
        # Only an address the user proved (allauth's confirmation mail; or an identity provider
        # authoritative for its domain, accounts/): SECURITY.md, "Accounts and the login".
        claims["email_verified"] = email_is_verified(user=user, email=user.email)
    return claims


@method_decorator(csrf_exempt, name="dispatch")  # bearer token in the header, never a cookie
class UserInfoView(View):
    """GET or POST /v2/auth/oauth2/userinfo (OpenID Connect Core §5.3), with an access token that
    was granted `openid` (RFC 6750 errors otherwise). CORS as for /v2/me (oauthflows.cors)."""

    http_method_names = ["get", "post", "options"]

    def get(self, request, *args, **kwargs):
        return self.answer(request)

    def post(self, request, *args, **kwargs):
        return self.answer(request)

    def options(self, request, *args, **kwargs):
        response = HttpResponse(status=204)
        response["Allow"] = "GET, POST, OPTIONS"
        return response

    def answer(self, request):
        # RFC 6750 §2.1: the header only (a token in the query or body is ignored); the scheme is
        # case-insensitive.
        try:
            raw = request_bearer_token(request)
        except MalformedBearer:
            return _bearer_error(401, "invalid_token", "The access token is invalid, expired or revoked.")
        if raw is None:
            return _bearer_error(401, None, "An access token is required: Authorization: Bearer <token>.")
        try:
            verification = get_verifier().verify(raw)
        except AuthorizationServerUnavailable:
            verification = None
        if verification is None or not audience_accepted(verification.token.audience):
            return _bearer_error(401, "invalid_token", "The access token is invalid, expired or revoked.")
        if "openid" not in verification.token.scopes:
            return _bearer_error(
                403, "insufficient_scope", "The access token was not granted the openid scope.", scope="openid"
            )
        response = JsonResponse(userinfo_claims(user=verification.user, scopes=verification.token.scopes))
        response["Cache-Control"] = "no-store"
        return response
