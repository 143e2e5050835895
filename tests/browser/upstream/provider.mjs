// panva's oidc-provider as an organization's identity provider, for the upstream sign-in tests
// (tests/browser/test_upstream_provider.py) and the ID-JAG tests
// (tests/clients/test_mcp_idjag_oidc_provider.py); tests/browser/upstream_provider.py starts it.
//
// UPSTREAM_CONFIG (JSON): {port, clients: [{client_id, client_secret, redirect_uris[, grant_types]}],
// accounts: {login: {email, email_verified, amr[, userinfo_sub]}}[, id_jag_policy: FILE]}. Binds 127.0.0.1:port,
// issuer http://localhost:port. The login page is ours (a form: who you are; no password, this is a
// test double), so that the sign-in can report the `amr` a real provider would (RFC 8176). Consent
// is implied (loadExistingGrant), as an organization's provider does for its own apps. Each start
// makes a new RS256 signing key (its kid the RFC 7638 thumbprint): a restart is a key rotation.
// PKCE (S256) is required of every client, as RFC 9700 §2.1.1 recommends. An account with
// `userinfo_sub` is a misbehaving provider's: its userinfo names that subject, its ID token the
// login (OpenID Connect Core §5.3.2 says a relying party must then not use the userinfo).
// Prints "listening" once it accepts connections.
//
// With id_jag_policy, the token endpoint also issues Identity Assertion JWT Authorization Grants
// (ID-JAG; IETF draft-ietf-oauth-identity-assertion-authz-grant, MCP's Enterprise-Managed
// Authorization) by RFC 8693 token exchange, registered the way oidc-provider's docs say
// ("Custom Grant Types", provider.registerGrantType). The policy file, read at each request, is
// what the organization's administrators configured: {AUDIENCE: {clients: {CLIENT_ID_HERE:
// CLIENT_ID_THERE}, scopes: [SCOPE, ...]}}, AUDIENCE being the issuer of an authorization server
// the organization trusts, CLIENT_ID_THERE the agent's client at that server.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import { calculateJwkThumbprint, SignJWT } from "jose";
import Provider, { errors } from "oidc-provider";

const config = JSON.parse(process.env.UPSTREAM_CONFIG);
const issuer = `http://localhost:${config.port}`;
const accounts = config.accounts;

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: "jwk" }), alg: "RS256", use: "sig" };
signingKey.kid = await calculateJwkThumbprint(signingKey);

const provider = new Provider(issuer, {
  clients: config.clients.map((client) => ({
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
    ...client,
  })),
  jwks: { keys: [signingKey] },
  // amr, acr and auth_time reach the ID token only when a requested scope lists them (RFC 8176
  // amr: what the person used to sign in).
  claims: {
    openid: ["sub", "amr", "acr", "auth_time", "sid"],
    email: ["email", "email_verified"],
    profile: ["name"],
  },
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: account.email, email_verified: account.email_verified, name: id };
      },
    };
  },
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope("openid email profile");
    await grant.save();
    return grant;
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: { devInteractions: { enabled: false } },
  cookies: { keys: ["upstream-test-cookie-key"] },
  pkce: { required: () => true },
});

// A misbehaving provider (an account with `userinfo_sub`): oidc-provider itself always answers the
// account's own `sub`, so its userinfo answer is rewritten on the way out.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.oidc?.route === "userinfo" && ctx.body && typeof ctx.body === "object") {
    const account = accounts[ctx.body.sub];
    if (account?.userinfo_sub) ctx.body = { ...ctx.body, sub: account.userinfo_sub };
  }
});

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG = "urn:ietf:params:oauth:token-type:id-jag";
const ID_JAG_LIFETIME = 300;

function invalidGrant(description) {
  return new errors.CustomOIDCProviderError("invalid_grant", description);
}

// RFC 8693 token exchange: an ID token this provider issued to the calling client becomes an
// ID-JAG for one of the authorization servers the policy names. The token endpoint has already
// authenticated the client (ctx.oidc.client) and checked that token exchange is one of its grants.
async function idJagExchange(ctx) {
  const { params, client } = ctx.oidc;
  if (params.requested_token_type !== ID_JAG) {
    throw new errors.InvalidRequest(`requested_token_type must be ${ID_JAG}`);
  }
  if (params.subject_token_type !== ID_TOKEN) {
    throw new errors.InvalidRequest(`subject_token_type must be ${ID_TOKEN}`);
  }
  if (!params.subject_token) throw new errors.InvalidRequest("subject_token is missing");
  if (!params.audience) throw new errors.InvalidRequest("audience is missing");

  // The provider's own check of an ID token it issued (as for an id_token_hint): signed with its
  // keys, its issuer, and the authenticated client as the audience. It ignores exp (a hint may be
  // old); a subject token may not be.
  let idToken;
  try {
    ({ payload: idToken } = await provider.IdToken.validate(params.subject_token, client));
  } catch (error) {
    throw invalidGrant(`subject_token is not an ID token of this provider for this client (${error.message})`);
  }
  const now = Math.floor(Date.now() / 1000);
  if (typeof idToken.exp !== "number" || idToken.exp <= now) throw invalidGrant("subject_token has expired");
  const account = accounts[idToken.sub];
  if (!account) throw invalidGrant("subject_token's person is no longer known");

  let policy;
  try {
    policy = JSON.parse(readFileSync(config.id_jag_policy, "utf8"))[params.audience];
  } catch {
    policy = undefined;
  }
  const clientThere = policy?.clients?.[client.clientId];
  if (!clientThere) {
    throw new errors.InvalidTarget(`this client may not get an ID-JAG for ${params.audience}`);
  }
  const allowed = policy.scopes ?? [];
  const scopes = params.scope ? params.scope.split(" ") : allowed;
  const beyond = scopes.filter((scope) => !allowed.includes(scope));
  if (beyond.length) throw new errors.InvalidScope("scope beyond the organization's policy", beyond.join(" "));

  const claims = {
    client_id: clientThere,
    jti: randomUUID(),
    scope: scopes.join(" "),
    ...(params.resource ? { resource: params.resource } : {}),
    ...(idToken.auth_time ? { auth_time: idToken.auth_time } : {}),
    ...(idToken.amr ? { amr: idToken.amr } : {}),
    email: account.email,
    email_verified: account.email_verified,
  };
  const assertion = await new SignJWT(claims)
    .setProtectedHeader({ alg: signingKey.alg, typ: "oauth-id-jag+jwt", kid: signingKey.kid })
    .setIssuer(issuer)
    .setSubject(idToken.sub)
    .setAudience(params.audience)
    .setIssuedAt(now)
    .setExpirationTime(now + ID_JAG_LIFETIME)
    .sign(privateKey);
  ctx.body = {
    access_token: assertion,
    issued_token_type: ID_JAG,
    token_type: "N_A",
    expires_in: ID_JAG_LIFETIME,
    scope: claims.scope,
  };
}

if (config.id_jag_policy) {
  provider.registerGrantType(TOKEN_EXCHANGE, idJagExchange, [
    "audience",
    "resource",
    "scope",
    "requested_token_type",
    "subject_token",
    "subject_token_type",
  ]);
}

function page(res, status, body) {
  res.writeHead(status, { "Content-Type": "text/html; charset=utf-8" });
  res.end(`<!doctype html><html lang="en"><title>Acme SSO</title><main>${body}</main></html>`);
}

async function readForm(req) {
  let data = "";
  for await (const chunk of req) data += chunk;
  return new URLSearchParams(data);
}

const callback = provider.callback();
const server = http.createServer(async (req, res) => {
  const match = /^\/interaction\/([\w-]+)(\/login)?$/.exec(req.url);
  if (!match) return callback(req, res);
  try {
    const details = await provider.interactionDetails(req, res);
    if (req.method === "GET") {
      return page(
        res,
        200,
        `<h1>Acme SSO</h1><p>Prompt: ${details.prompt.name}</p>
        <form method="post" action="/interaction/${match[1]}/login">
        <label for="login">Acme username</label><input id="login" name="login" autocomplete="username">
        <button type="submit">Sign in to Acme</button></form>`,
      );
    }
    const login = (await readForm(req)).get("login");
    if (!accounts[login]) return page(res, 400, "<h1>Unknown Acme user</h1>");
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: login, amr: accounts[login].amr } },
      { mergeWithLastSubmission: false },
    );
  } catch (error) {
    page(res, 500, `<h1>Upstream error</h1><pre>${String(error).replace(/</g, "&lt;")}</pre>`);
  }
});
server.listen(config.port, "127.0.0.1", () => console.log("listening"));
