"""A complete web app signing users in with Authlib (docs/integrating.md §6): a confidential client.

    pip install flask authlib requests
    SCHEDULING_ISSUER=http://localhost:8000 CLIENT_ID=… CLIENT_SECRET=… \\
      REDIRECT_URI=http://127.0.0.1:5000/callback flask --app examples.authlib_flask.app run

Register the client (confidential) with that redirect URI and the scope PROFILE_READ. The routes:
/login sends the user to the consent screen; /callback checks `state` and `iss`, exchanges the
code and keeps the tokens; / calls GET /v2/me (Authlib refreshes by itself when the access token
has expired, and `save_token` keeps the new pair); /logout revokes the refresh token.
"""

import os
import secrets

from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from flask import Flask, abort, redirect, request, session, url_for


def create_app(*, issuer: str, client_id: str, client_secret: str, redirect_uri: str) -> Flask:
    app = Flask(__name__)
    app.secret_key = os.environ.get("FLASK_SECRET_KEY") or secrets.token_urlsafe(32)
    # Tokens per signed-in browser, server-side (a real app: its database, encrypted at rest). The
    # session cookie carries only a random key, never a token.
    tokens: dict[str, dict] = {}
    pending: dict[str, str] = {}  # state -> PKCE verifier, between /login and /callback
    app.extensions["scheduling_tokens"] = tokens

    def oauth(key: str | None = None) -> OAuth2Session:
        def save_token(token, refresh_token=None, access_token=None):
            # Authlib calls this after every automatic refresh: the refresh token was rotated, so
            # the new pair must replace the old one, or the next refresh would be a replay.
            tokens[key] = token

        return OAuth2Session(
            client_id,
            client_secret,
            scope="PROFILE_READ",
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            token_endpoint=f"{issuer}/v2/auth/oauth2/token",
            token=tokens.get(key) if key else None,
            update_token=save_token,
        )

    @app.get("/login")
    def login():
        verifier = generate_token(48)
        url, state = oauth().create_authorization_url(f"{issuer}/auth/oauth2/authorize", code_verifier=verifier)
        pending[state] = verifier
        return redirect(url)

    @app.get("/callback")
    def callback():
        # RFC 9207: the answer must come from this authorization server (Authlib does not check
        # `iss`), and `state` must be one this app sent (it also finds the PKCE verifier).
        if request.args.get("iss") != issuer:
            abort(400, "The authorization response comes from another issuer.")
        verifier = pending.pop(request.args.get("state", ""), None)
        if verifier is None:
            abort(400, "Unknown or reused state.")
        if "error" in request.args:
            return f"Not signed in: {request.args['error']}", 403
        key = secrets.token_urlsafe(16)
        tokens[key] = oauth().fetch_token(authorization_response=request.url, code_verifier=verifier)
        session["key"] = key
        return redirect(url_for("home"))

    @app.get("/")
    def home():
        key = session.get("key")
        if key not in tokens:
            return redirect(url_for("login"))
        profile = oauth(key).get(f"{issuer}/v2/me")  # refreshes by itself when the access token expired
        profile.raise_for_status()
        return {"signed_in_as": profile.json()["data"]["username"]}

    @app.get("/logout")
    def logout():
        key = session.pop("key", None)
        token = tokens.pop(key, None) if key else None
        if token:
            # RFC 7009: revoking the refresh token ends its access token too.
            oauth().revoke_token(
                f"{issuer}/v2/auth/oauth2/revoke", token=token["refresh_token"], token_type_hint="refresh_token"
            )
        return {"signed_out": True}

    return app


if os.environ.get("CLIENT_ID"):
    app = create_app(
        issuer=os.environ["SCHEDULING_ISSUER"].rstrip("/"),
        client_id=os.environ["CLIENT_ID"],
        client_secret=os.environ["CLIENT_SECRET"],
        redirect_uri=os.environ["REDIRECT_URI"],
    )
