// One OpenID Connect flow with a strict client library, against the live test server.
//
// tests/clients/test_openid_clients.py runs it: `node flow.mjs`, with
//   LIBRARY        openid-client | oauth4webapi
//   ISSUER         the server's issuer (plain http on loopback: allowInsecureRequests)
//   CLIENT_ID, CLIENT_SECRET (empty for a public client), REDIRECT_URI, SCOPE
//   ID_TOKEN_ALG   RS256 (default) or ES256: the client's registered ID token algorithm
//   WRONG_NONCE    1: validate the ID token against another nonce (the library must refuse it)
// It prints {"authorization_url": ...} on one line, reads the callback URL (the redirect the user's
// browser got, driven by the test) on stdin, then prints the result on one line: the validated ID
// token claims, the userinfo and the granted scope, or {"error": ...}.
// The ID token's signature is checked against the server's JWKS (non-repudiation checks), and its
// iss, aud, exp, iat, nonce, and auth_time (max_age) by the library itself.

import * as readline from "node:readline";
import * as oauth from "oauth4webapi";
import * as client from "openid-client";

const env = process.env;
const secret = env.CLIENT_SECRET || undefined;
const maxAge = 3600;

function print(value) {
  process.stdout.write(JSON.stringify(value) + "\n");
}

async function callbackUrl() {
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    return new URL(line.trim());
  }
  throw new Error("no callback URL on stdin");
}

async function withOpenidClient() {
  const config = await client.discovery(
    new URL(env.ISSUER),
    env.CLIENT_ID,
    { id_token_signed_response_alg: env.ID_TOKEN_ALG || "RS256" },
    secret ? client.ClientSecretBasic(secret) : client.None(),
    { execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks] },
  );
  const verifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: env.REDIRECT_URI,
    scope: env.SCOPE,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    nonce,
    state,
    max_age: String(maxAge),
  });
  print({ authorization_url: url.href });
  const tokens = await client.authorizationCodeGrant(config, await callbackUrl(), {
    pkceCodeVerifier: verifier,
    expectedNonce: env.WRONG_NONCE === "1" ? client.randomNonce() : nonce,
    expectedState: state,
    idTokenExpected: true,
    maxAge,
  });
  const claims = tokens.claims();
  const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
  return { claims, userinfo, scope: tokens.scope, nonce };
}

async function withOauth4webapi() {
  const issuer = new URL(env.ISSUER);
  const insecure = { [oauth.allowInsecureRequests]: true };
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecure }),
  );
  const registration = {
    client_id: env.CLIENT_ID,
    id_token_signed_response_alg: env.ID_TOKEN_ALG || "RS256",
    default_max_age: maxAge,
  };
  const auth = secret ? oauth.ClientSecretBasic(secret) : oauth.None();
  const verifier = oauth.generateRandomCodeVerifier();
  const nonce = oauth.generateRandomNonce();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: env.CLIENT_ID,
    redirect_uri: env.REDIRECT_URI,
    response_type: "code",
    scope: env.SCOPE,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    nonce,
    state,
    max_age: String(maxAge),
  }).toString();
  print({ authorization_url: url.href });
  const params = oauth.validateAuthResponse(as, registration, await callbackUrl(), state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    registration,
    auth,
    params,
    env.REDIRECT_URI,
    verifier,
    insecure,
  );
  const result = await oauth.processAuthorizationCodeResponse(as, registration, response, {
    expectedNonce: env.WRONG_NONCE === "1" ? oauth.generateRandomNonce() : nonce,
    requireIdToken: true,
    maxAge,
  });
  // The ID token's signature, against the JWKS (the claims were checked above).
  await oauth.validateApplicationLevelSignature(as, response, insecure);
  const claims = oauth.getValidatedIdTokenClaims(result);
  const userinfo = await oauth.processUserInfoResponse(
    as,
    registration,
    claims.sub,
    await oauth.userInfoRequest(as, registration, result.access_token, insecure),
  );
  return { claims, userinfo, scope: result.scope, nonce };
}

try {
  const run = env.LIBRARY === "oauth4webapi" ? withOauth4webapi : withOpenidClient;
  print(await run());
} catch (error) {
  const cause = error?.cause;
  print({
    error: String(error?.code || error?.name || "Error"),
    message: String(error?.message || error),
    cause: cause?.message ?? null,
  });
  process.exitCode = 1;
}
