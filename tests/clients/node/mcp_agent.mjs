// An agent on the MCP TypeScript SDK (docs/agents.md, "The TypeScript SDK"): it registers itself
// (RFC 7591), sends the user to consent, redeems the code with PKCE and `resource`, and calls the
// example MCP server's tools. The browser is the test's: this script prints
// {"authorize": URL} and reads the redirect's code from standard input, one line.
//
//   MCP_URL=http://127.0.0.1:8931/mcp node mcp_agent.mjs
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const state = {};

const authProvider = {
  get redirectUrl() {
    return "http://127.0.0.1:33418/callback";
  },
  get clientMetadata() {
    return {
      client_name: "TypeScript agent",
      redirect_uris: ["http://127.0.0.1:33418/callback"],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => state.client,
  saveClientInformation: (client) => { state.client = client; },
  tokens: () => state.tokens,
  saveTokens: (tokens) => { state.tokens = tokens; },
  saveCodeVerifier: (verifier) => { state.verifier = verifier; },
  codeVerifier: () => state.verifier,
  redirectToAuthorization: (url) => {
    console.log(JSON.stringify({ authorize: url.toString() }));
  },
};

function transport() {
  return new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), { authProvider });
}

const client = new Client({ name: "typescript-agent", version: "1.0.0" });
try {
  await client.connect(transport());
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
  const code = (await lines.next()).value.trim();
  const pending = transport();
  await pending.finishAuth(code);
  await client.connect(pending);
}
const tools = await client.listTools();
const whoami = await client.callTool({ name: "whoami", arguments: {} });
const bookings = await client.callTool({ name: "list_bookings", arguments: {} });
console.log(JSON.stringify({
  tools: tools.tools.map((tool) => tool.name).sort(),
  whoami: whoami.structuredContent,
  bookings: bookings.structuredContent,
  client_id: state.client.client_id,
}));
process.exit(0);
