"""The signature algorithms this server signs with: asymmetric only, and the one list of them.

Read by the settings (OAUTH_JWT_ACCESS_TOKEN_ALGORITHM), the start-up checks (a key of each), the
commands' choices and the models' choices (SigningKey.algorithm, OAuthClient's ID token algorithm).
No HS256: it would sign with a client secret, which is stored here only as a digest; no `none`.
Imports nothing, so that the settings can read it before any app is loaded.
"""

SIGNING_ALGORITHMS = ("ES256", "RS256")
