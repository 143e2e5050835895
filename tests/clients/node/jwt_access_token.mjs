// A resource server's validation of one JWT access token (RFC 9068) with oauth4webapi's
// validateJwtAccessToken, against the live test server.
//
// tests/clients/test_jwt_access_token_client.py runs it: `node jwt_access_token.mjs`, with
//   ISSUER        the server's issuer (plain http on loopback: allowInsecureRequests)
//   AUDIENCE      the audience this resource server expects for itself (its resource URI)
//   ACCESS_TOKEN  the token, sent as `Authorization: Bearer ...` on a request to AUDIENCE
//   ALG           the expected signing algorithm (ES256 or RS256)
// It discovers the authorization server (RFC 8414 /.well-known/oauth-authorization-server, whose
// `issuer` the library checks), then lets the library check the token: typ at+jwt, the presence
// and types of iss/exp/aud/sub/iat/jti/client_id, iss (the discovered issuer), aud (AUDIENCE),
// exp, and the signature against the keys at the metadata's `jwks_uri`. It prints one line: the
// validated claims, or {"error": ...}.

import * as oauth from "oauth4webapi";

const env = process.env;

function print(value) {
  process.stdout.write(JSON.stringify(value) + "\n");
}

try {
  const issuer = new URL(env.ISSUER);
  const insecure = { [oauth.allowInsecureRequests]: true };
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
  );
  const request = new Request(env.AUDIENCE, {
    headers: { authorization: `Bearer ${env.ACCESS_TOKEN}` },
  });
  const claims = await oauth.validateJwtAccessToken(as, request, env.AUDIENCE, {
    ...insecure,
    signingAlgorithms: [env.ALG || "ES256"],
  });
  print({ claims, jwks_uri: as.jwks_uri });
} catch (error) {
  const cause = error?.cause;
  print({
    error: String(error?.code || error?.name || "Error"),
    message: String(error?.message || error),
    cause: cause instanceof Error ? cause.message : null,
  });
  process.exitCode = 1;
}
