"""The token endpoint and its grants (the code, refresh, token exchange and ID-JAG grants, on
django-oauth-toolkit's validator, backend and server), revocation, introspection, userinfo."""
