// An organization's identity provider that issues ID-JAGs (Identity Assertion JWT Authorization
// Grants, IETF draft-ietf-oauth-identity-assertion-authz-grant; MCP's Enterprise-Managed
// Authorization): panva's oidc-provider, with an RFC 8693 token exchange registered on it the way its
// docs say ("Custom Grant Types", provider.registerGrantType). An agent's client trades an ID token
// this provider issued it for an ID-JAG naming an authorization server the organization trusts,
// which that server (this project: docs/agents.md, "Organizations in charge") trades for an access
// token with no consent page. Stock oidc-provider cannot issue one; Okta calls the feature Cross App
// Access.
//
//   npm ci && node provider.mjs config.example.json     (docs/agents.md, "The organization's provider")
//
// The configuration, a JSON file named on the command line:
//   name            what its pages say (default "Acme SSO")
//   port            where it listens, on `host` (default 127.0.0.1)
//   issuer          default http://localhost:PORT; what every token says in `iss`, and what this
//                   server's `identityprovider add --issuer` must be exactly
//   clients         [{client_id, client_secret, redirect_uris[, grant_types]}]: the organization's
//                   apps. An agent that may get ID-JAGs lists the token exchange grant
//                   (urn:ietf:params:oauth:grant-type:token-exchange) in its grant_types.
//   accounts        {login: {email, email_verified, amr[, userinfo_sub]}}: the people. An account
//                   with `userinfo_sub` is a misbehaving provider's, for the tests: its userinfo names
//                   that subject, its ID token the login (OpenID Connect Core §5.3.2 says a relying
//                   party must then not use the userinfo). DEMO ONLY: the login page
//                   asks who you are and checks no password; a real provider signs people in against
//                   its directory (replace findAccount and the /interaction pages).
//   id_jag_policy   a JSON file (relative to the configuration's folder), read again at each
//                   exchange, so that the organization's administrators change it while it runs:
//                   {AUDIENCE: {clients: {CLIENT_ID_HERE: CLIENT_ID_THERE}, scopes: [SCOPE, ...]}},
//                   AUDIENCE the issuer of an authorization server the organization trusts,
//                   CLIENT_ID_THERE the agent's client at that server, scopes the most it may get.
//                   Without it, no ID-JAG is issued (a provider for people's sign-in only).
//
// Consent at the provider is implied (loadExistingGrant), as an organization's provider does for its
// own apps. Each start makes a new RS256 signing key (its kid the RFC 7638 thumbprint): a restart is
// a key rotation; a provider that must keep its keys loads them instead. It prints "listening" once
// it accepts connections. The tests run it as the upstream provider (tests/browser/upstream_provider.py).
import { generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import { dirname, resolve } from "node:path";
import { calculateJwkThumbprint, SignJWT } from "jose";
import Provider, { errors } from "oidc-provider";

const configPath = process.argv[2];
if (!configPath) {
  console.error("usage: node provider.mjs CONFIG.json (see config.example.json)");
  process.exit(2);
}
const config = JSON.parse(readFileSync(configPath, "utf8"));
const issuer = config.issuer ?? `http://localhost:${config.port}`;
const accounts = config.accounts;
const name = config.name ?? "Acme SSO";
const policyPath = config.id_jag_policy ? resolve(dirname(configPath), config.id_jag_policy) : null;

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
  // Sessions last as long as the process (a new key each start).
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  // PKCE (S256) is required of every client, as RFC 9700 §2.1.1 recommends.
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
    policy = JSON.parse(readFileSync(policyPath, "utf8"))[params.audience];
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

if (policyPath) {
  provider.registerGrantType(TOKEN_EXCHANGE, idJagExchange, [
    "audience",
    "resource",
    "scope",
    "requested_token_type",
    "subject_token",
    "subject_token_type",
  ]);
}

const escaped = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res, status, body) {
  res.writeHead(status, { "Content-Type": "text/html; charset=utf-8" });
  res.end(`<!doctype html><html lang="en"><title>${escaped(name)}</title><main>${body}</main></html>`);
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
        `<h1>${escaped(name)}</h1><p>Prompt: ${details.prompt.name}</p>
        <form method="post" action="/interaction/${match[1]}/login">
        <label for="login">Username</label><input id="login" name="login" autocomplete="username">
        <button type="submit">Sign in</button></form>`,
      );
    }
    const login = (await readForm(req)).get("login");
    if (!accounts[login]) return page(res, 400, "<h1>Unknown user</h1>");
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: login, amr: accounts[login].amr } },
      { mergeWithLastSubmission: false },
    );
  } catch (error) {
    page(res, 500, `<h1>Upstream error</h1><pre>${escaped(error)}</pre>`);
  }
});
server.listen(config.port, config.host ?? "127.0.0.1", () => console.log("listening"));
