// A resource server's token check in Node, written from docs/verifying-tokens.md alone (no library):
// introspect, then apply the route's scope rule. `node verify.mjs VECTORS_JSON INTROSPECT_URL` runs
// scopes/verification_vectors.json against it (the test drives a stub introspection endpoint).
import { readFileSync } from "node:fs";

const CATALOG = JSON.parse(readFileSync(new URL("../../scopes/catalog.json", import.meta.url)));
const KNOWN = new Set(CATALOG.scopes.map((s) => s.name));
const IMPLIES = new Map(CATALOG.rules.implies.map((r) => [r.scope, r.also_grants]));

// Rule 3: the path decides the level; the method read or write. `resource` and the routes a
// service declares are its own: here, the example routes of the vectors.
const DECLARED = { bookings: "BOOKING", memberships: "MEMBERSHIP", webhooks: "WEBHOOK", schedules: null };
const SCHEDULES = { GET: "SCHEDULE_READ", POST: "SCHEDULE_WRITE" };  // declared per method; DELETE: none
const PUBLIC = new Set(["POST /v2/bookings/create", "GET /v2/slots"]);

function requiredScope(method, path) {
  const last = path.split("/").filter(Boolean).pop();
  if (last === "schedules") return SCHEDULES[method] ?? null;
  const resource = DECLARED[last];
  if (!resource) return null;
  const level = /^\/v2\/(organizations\/[^/]+\/)?teams\/[^/]+\//.test(path) ? "TEAM_"
    : /^\/v2\/organizations\/[^/]+\//.test(path) ? "ORG_" : "";
  const name = `${level}${resource}_${["GET", "HEAD"].includes(method) ? "READ" : "WRITE"}`;
  return KNOWN.has(name) ? name : null;  // rule 5: a scope that does not exist opens to nobody
}

export async function check(method, path, authorization, introspectUrl, resourceUri) {
  if (PUBLIC.has(`${method} ${path}`)) return { status: 200 };
  const token = /^bearer\s+(.+)$/i.exec(authorization ?? "")?.[1];
  if (!token) return { status: 401, challenge: 'Bearer realm="api"' };
  let answer;
  try {
    const response = await fetch(introspectUrl, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: "Basic " + btoa("id:secret") },
      body: new URLSearchParams({ token, token_type_hint: "access_token" }),
    });
    if (response.status !== 200) return { status: 503 };  // rule 9: never 401
    answer = await response.json();
  } catch {
    return { status: 503 };
  }
  const invalid = { status: 401, challenge: 'Bearer realm="api", error="invalid_token"' };
  if (answer.active !== true || String(answer.token_type).toLowerCase() !== "bearer") return invalid;  // rule 2
  if (answer.exp <= Date.now() / 1000) return invalid;
  // Rule 2, audience: a token bound to other services (aud without our resource URI) is no token here.
  const aud = answer.aud === undefined ? [] : typeof answer.aud === "string" ? [answer.aud] : answer.aud;
  if (aud.length && !aud.includes(resourceUri)) return invalid;
  if (answer.unrestricted === true && answer.scope === "") return { status: 200 };  // rule 6
  const required = requiredScope(method, path);  // rule 7: undeclared -> null -> refused
  const granted = new Set(answer.scope.split(" ").filter(Boolean));
  for (const scope of [...granted]) if (IMPLIES.has(scope)) granted.add(IMPLIES.get(scope));  // rule 4
  if (required && granted.has(required)) return { status: 200 };
  return { status: 403, required, challenge: `Bearer realm="api", error="insufficient_scope"` + (required ? `, scope="${required}"` : "") };
}

// Run the vectors: the stub at INTROSPECT_URL is told each vector's answer via ?set=.
if (process.argv[2]) {
  const [vectorsFile, introspectUrl, unreachableUrl] = process.argv.slice(2);
  const { vectors, resource_uri } = JSON.parse(readFileSync(vectorsFile));
  let failed = 0;
  for (const v of vectors) {
    let url = introspectUrl;
    if (v.token === "unavailable") url = unreachableUrl;
    else if (v.token !== null) {
      const answer = v.token.active ? { client_id: "app", username: "u", sub: "1", exp: Date.now() / 1000 + 600, ...v.token } : v.token;
      await fetch(introspectUrl + "?set", { method: "PUT", body: JSON.stringify(answer) });
    }
    const got = await check(v.method, v.path, v.token === null ? null : "Bearer some-token", url, resource_uri);
    const ok = got.status === v.expect.status && (!v.expect.required_scope || got.required === v.expect.required_scope);
    if (!ok) { failed++; console.log(`FAIL ${v.name}: got ${JSON.stringify(got)}, expected ${JSON.stringify(v.expect)}`); }
  }
  console.log(`${vectors.length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
