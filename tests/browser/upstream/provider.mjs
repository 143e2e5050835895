// panva's oidc-provider as an organization's identity provider, for the upstream sign-in tests.
//
// UPSTREAM_CONFIG (JSON): {port, client: {client_id, client_secret, redirect_uris},
// accounts: {login: {email, email_verified, amr}}}. Binds 127.0.0.1:port, issuer
// http://localhost:port. The login page is ours (a form: who you are; no password, this is a test
// double), so that the sign-in can report the `amr` a real provider would (RFC 8176). Consent is
// implied (loadExistingGrant), as an organization's provider does for its own apps. Prints
// "listening" once it accepts connections.
import http from "node:http";
import Provider from "oidc-provider";

const config = JSON.parse(process.env.UPSTREAM_CONFIG);
const issuer = `http://localhost:${config.port}`;
const accounts = config.accounts;

const provider = new Provider(issuer, {
  clients: [
    {
      ...config.client,
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
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
  pkce: { required: () => false },
});

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
