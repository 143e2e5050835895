// An agent on the MCP TypeScript SDK (docs/agents.md, "With the official MCP TypeScript SDK"), the
// whole way: it registers itself (RFC 7591), sends the user to consent, redeems the code with PKCE
// and `resource`, calls the read tools; once an administrator has approved it, it steps up to
// `create_booking` (403 insufficient_scope → a new authorization for the scopes the challenge
// names); then it reads, updates and deletes its registration (RFC 7592).
//
// The browser and the administrator are its driver's (tests/clients/test_mcp_typescript.py). One
// JSON object per line on standard output; one line per question on standard input:
//   {"authorize": URL}   the driver answers with the code from the redirect
//   {"read": …}          the driver answers "approved" once an administrator approved the agent
//   {"plain": …}         the SDK's own step-up, alone (see STEP-UP below)
//   {"booked": …}        the step-up with the agent's provider, and create_booking's answer
//   {"updated": …}       RFC 7592 read and update; the driver answers "delete"
//   {"deleted": …}       RFC 7592 delete, and what the MCP server then says to the agent's token
// Nothing printed is a secret: no code, token or registration access token.
//
//   MCP_URL=http://127.0.0.1:8931/mcp node mcp_agent.mjs
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const MCP_URL = new URL(process.env.MCP_URL);
const REDIRECT_URL = "http://127.0.0.1:33418/callback";
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const state = { stepUpPending: false };

async function nextLine() {
  return (await lines.next()).value.trim();
}

function say(object) {
  console.log(JSON.stringify(object));
}

// STEP-UP. The SDK 1.32 answers a 403 insufficient_scope by running auth() with the challenge's
// scope, but auth() refreshes first whenever it holds a refresh token, and a refresh cannot widen a
// grant (RFC 6749 §6): the same 403 comes back and the transport gives up ("Server returned 403
// after trying upscoping", typescript-sdk issue #2255). So while a step-up is pending this
// provider shows auth() its tokens without the refresh token: auth() then goes on to what the
// SDK does for a new authorization (the challenge's scope, PKCE, `resource`, redirectToAuthorization).
const authProvider = {
  get redirectUrl() {
    return REDIRECT_URL;
  },
  get clientMetadata() {
    return {
      client_name: "TypeScript agent",
      redirect_uris: [REDIRECT_URL],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => state.client,
  saveClientInformation: (client) => {
    state.client = client;
  },
  tokens: () =>
    state.stepUpPending && state.tokens ? { ...state.tokens, refresh_token: undefined } : state.tokens,
  saveTokens: (tokens) => {
    state.tokens = tokens;
    state.stepUpPending = false;
  },
  saveCodeVerifier: (verifier) => {
    state.verifier = verifier;
  },
  codeVerifier: () => state.verifier,
  redirectToAuthorization: (url) => {
    say({ authorize: url.toString() });
  },
};

// Every request the transport and auth() make goes through here: it notices a step-up challenge,
// and keeps RFC 7592's fields of the registration answer, which the SDK's schema drops (it keeps
// RFC 7591's client information only).
function agentFetch({ stepUp }) {
  return async (url, init) => {
    const response = await fetch(url, init);
    const challenge = response.headers.get("www-authenticate") ?? "";
    if (stepUp && response.status === 403 && /error="insufficient_scope"/.test(challenge)) {
      state.stepUpPending = true;
    }
    if (init?.method === "POST" && response.status === 201) {
      const answer = await response.clone().json().catch(() => ({}));
      if (answer.registration_access_token) {
        state.registration = {
          token: answer.registration_access_token,
          uri: answer.registration_client_uri,
        };
      }
    }
    return response;
  };
}

function transport({ stepUp = true } = {}) {
  return new StreamableHTTPClientTransport(MCP_URL, { authProvider, fetch: agentFetch({ stepUp }) });
}

// One tool call on its own connection (the example server is stateless); when the SDK sends the
// user to authorize (a first connection, or a step-up), the driver's code finishes it and the call
// is made again.
async function call(name, args, options) {
  const client = new Client({ name: "typescript-agent", version: "1.0.0" });
  let pending = transport(options);
  try {
    await client.connect(pending);
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    await pending.finishAuth(await nextLine());
    pending = transport(options);
    await client.connect(pending);
  }
  try {
    try {
      return await client.callTool({ name, arguments: args });
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) throw error;
      await pending.finishAuth(await nextLine());
      return await client.callTool({ name, arguments: args });
    }
  } finally {
    await client.close();
  }
}

async function listTools() {
  const client = new Client({ name: "typescript-agent", version: "1.0.0" });
  await client.connect(transport());
  try {
    return (await client.listTools()).tools.map((tool) => tool.name).sort();
  } finally {
    await client.close();
  }
}

// 1. Registration, consent, the read tools.
const whoami = await call("whoami", {});
const bookings = await call("list_bookings", {});
say({
  read: {
    tools: await listTools(),
    whoami: whoami.structuredContent,
    bookings: bookings.structuredContent,
    client_id: state.client.client_id,
    scope: state.tokens.scope,
    has_refresh_token: Boolean(state.tokens.refresh_token),
    registration_client_uri: state.registration?.uri,
  },
});
if ((await nextLine()) !== "approved") throw new Error("expected the driver's 'approved'");

// 2. The write tool. First the SDK's own handling alone (no provider help): the driver checks that
// it still dead-ends, which is why the provider above helps; then with the provider's help.
try {
  const booked = await call("create_booking", { title: "Never booked" }, { stepUp: false });
  say({ plain: { booked: booked.structuredContent ?? null, error: null } });
} catch (error) {
  say({ plain: { booked: null, error: `${error.constructor.name}: ${error.message}` } });
}
const booked = await call("create_booking", { title: "TypeScript lunch" });
say({ booked: { result: booked.structuredContent, is_error: Boolean(booked.isError), scope: state.tokens.scope } });

// 3. RFC 7592: the registration, with its registration access token (the SDK has no API for it).
const { token: firstToken, uri } = state.registration;
const bearer = (token, extra = {}) => ({ headers: { Authorization: `Bearer ${token}`, ...extra } });
const read = await fetch(uri, bearer(firstToken));
const document = await read.json();
const { registration_client_uri: _, ...metadata } = document;
const put = await fetch(uri, {
  method: "PUT",
  body: JSON.stringify({ ...metadata, client_name: "TypeScript agent, renamed" }),
  ...bearer(firstToken, { "Content-Type": "application/json" }),
});
const updated = await put.json();
const withOldToken = await fetch(uri, bearer(firstToken));
say({
  updated: {
    read_status: read.status,
    read_client_id: document.client_id,
    read_scope: document.scope,
    status: put.status,
    client_name: updated.client_name,
    token_rotated: Boolean(updated.registration_access_token) && updated.registration_access_token !== firstToken,
    old_token_status: withOldToken.status,
  },
});
if ((await nextLine()) !== "delete") throw new Error("expected the driver's 'delete'");
const deleted = await fetch(uri, { method: "DELETE", ...bearer(updated.registration_access_token) });
const afterwards = await fetch(uri, bearer(updated.registration_access_token));
// The agent's access token ended with its registration: the MCP server says so.
const mcp = await fetch(MCP_URL, {
  method: "POST",
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  ...bearer(state.tokens.access_token, { "Content-Type": "application/json", Accept: "application/json, text/event-stream" }),
});
say({
  deleted: {
    status: deleted.status,
    read_status: afterwards.status,
    mcp_status: mcp.status,
    mcp_challenge: mcp.headers.get("www-authenticate"),
  },
});
process.exit(0);
