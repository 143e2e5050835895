"""An organization's identity provider for ID-JAG tests: its discovery document and JWKS served on
loopback, and assertions minted with a key the test holds (oauthflows.token.idjag)."""

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from jwcrypto import jwk, jwt

from oauthflows.token.idjag import ID_JAG_TYPE


class OrganizationProvider:
    """Serves /.well-known/openid-configuration and /jwks.json on 127.0.0.1; signs ID-JAGs."""

    def __init__(self):
        self.key = jwk.JWK.generate(kty="EC", crv="P-256", kid="org-key-1")
        self.published = [self.key]
        self.jwks_hits = 0
        self.jwks_failing = False  # the JWKS answers 503 (an outage at the provider)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": outer.issuer, "jwks_uri": outer.issuer + "/jwks.json"}
                elif self.path == "/jwks.json":
                    outer.jwks_hits += 1
                    if outer.jwks_failing:
                        self.send_response(503)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    body = {"keys": [key.export_public(as_dict=True) for key in outer.published]}
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                payload = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def assertion(self, *, key=None, header: dict | None = None, **claims) -> str:
        """An ID-JAG; `claims` override the defaults (None removes one)."""
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "sub": "employee-42",
            "iat": now,
            "exp": now + 120,
            "jti": str(uuid.uuid4()),
        } | claims
        body = {name: value for name, value in body.items() if value is not None}
        signer = key or self.key
        token = jwt.JWT(
            header={"alg": "ES256", "typ": ID_JAG_TYPE, "kid": signer.kid} | (header or {}),
            claims=json.dumps(body),
        )
        token.make_signed_token(signer)
        return token.serialize()
