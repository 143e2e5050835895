"""allauth's OpenID Connect provider as every upstream sign-in uses it (SOCIALACCOUNT_PROVIDERS'
documented `provider_class`): PKCE and a nonce on every authorization request, one subject.

- PKCE (RFC 7636, S256): allauth's own, switched on for every provider (`oauth_pkce_enabled` in the
  app settings accounts.socialadapter builds) and here whatever those say. RFC 9700 §2.1.1: PKCE
  alone stops an injected code.
- A nonce (OpenID Connect Core §3.1.2.1): allauth's provider sends none and checks none. Ours is
  derived from the sign-in's PKCE verifier, which allauth keeps in the sign-in's state in the
  session (one per sign-in, used once, expiring with it), so it needs no storage of its own; the
  ID token must carry it back (§3.1.3.7 item 11), checked where allauth hands that state over
  (accounts.socialadapter.SocialAccountAdapter.pre_social_login).
- One subject (§5.3.2): the sign-in needs an ID token, and a userinfo answer whose `sub` is not the
  ID token's is refused rather than used (allauth prefers userinfo's claims to the ID token's).
  Refusals are allauth's "sign-in failed" page (ProviderException), never a 500.
"""

import base64
import hmac

from allauth.socialaccount.providers.base import ProviderException
from allauth.socialaccount.providers.oauth2.utils import generate_code_challenge
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from django.utils.crypto import salted_hmac

NONCE_SALT = "accounts.upstream.nonce"


def upstream_nonce(verifier: str) -> str:
    """The nonce of the sign-in whose PKCE verifier is `verifier`. One-way (an HMAC under
    SECRET_KEY): neither it nor the S256 challenge, both sent through the browser, tells the
    verifier."""
    digest = salted_hmac(NONCE_SALT, verifier, algorithm="sha256").digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def upstream_nonce_matches(*, state: dict, id_token: dict) -> bool:
    """Whether the ID token carries the nonce of the sign-in whose allauth `state` it answers."""
    verifier = state.get("pkce_code_verifier") if isinstance(state, dict) else None
    nonce = id_token.get("nonce") if isinstance(id_token, dict) else None
    if not isinstance(verifier, str) or not verifier or not isinstance(nonce, str):
        return False
    return hmac.compare_digest(nonce.encode(), upstream_nonce(verifier).encode())


class UpstreamProvider(OpenIDConnectProvider):
    # allauth reads a provider's URLs from its package: the login and callback stay allauth's.
    package = "allauth.socialaccount.providers.openid_connect"

    def get_pkce_params(self) -> dict:
        # allauth adds these to the authorization request and keeps `code_verifier` in the state.
        params = super().get_pkce_params() or generate_code_challenge()
        params["nonce"] = upstream_nonce(params["code_verifier"])
        return params

    def sociallogin_from_response(self, request, response):
        id_token = response.get("id_token") if isinstance(response, dict) else None
        if not isinstance(id_token, dict) or not isinstance(id_token.get("sub"), str) or not id_token["sub"]:
            raise ProviderException("The identity provider sent no ID token.")
        userinfo = response.get("userinfo")
        if userinfo is not None and (not isinstance(userinfo, dict) or userinfo.get("sub") != id_token["sub"]):
            # OpenID Connect Core §5.3.2: "if these do not match, the UserInfo Response values MUST NOT be used".
            raise ProviderException("The identity provider's userinfo names another subject than its ID token.")
        return super().sociallogin_from_response(request, response)
