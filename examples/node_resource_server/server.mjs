// A resource server in 30 lines of Node, no library: introspection (RFC 7662) and the catalog's rules.
// OAUTH_INTROSPECTION_URL, OAUTH_RESOURCE_SERVER_ID/_SECRET, OAUTH_RESOURCE_URI, PORT; routes below.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";

const catalog = JSON.parse(readFileSync(new URL("../../scopes/catalog.json", import.meta.url)));
const implies = new Map(catalog.rules.implies.map((rule) => [rule.scope, rule.also_grants]));
const routes = [[/^\/v2\/bookings$/, "BOOKING_READ"], [/^\/v2\/teams\/\d+\/bookings$/, "TEAM_BOOKING_READ"]];
const env = process.env, basic = btoa(`${env.OAUTH_RESOURCE_SERVER_ID}:${env.OAUTH_RESOURCE_SERVER_SECRET}`);
const send = (res, status, body, challenge) => {
  if (challenge !== undefined) res.setHeader("WWW-Authenticate", `Bearer realm="api"${challenge}`);
  res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body));
};
createServer(async (req, res) => {
  const required = routes.find(([path]) => path.test(req.url))?.[1];
  if (req.method !== "GET" || !required) return send(res, 404, { error: "not_found" });
  const token = /^bearer (\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
  if (!token) return send(res, 401, { error: "unauthorized" }, "");
  let answer;
  try {
    const response = await fetch(env.OAUTH_INTROSPECTION_URL, { method: "POST", body: new URLSearchParams({ token }),
      headers: { Authorization: `Basic ${basic}`, "Content-Type": "application/x-www-form-urlencoded" } });
    if (response.status !== 200) throw new Error(`introspection answered ${response.status}`);
    answer = await response.json();
  } catch { return send(res, 503, { error: "temporarily_unavailable" }); }  // never "allowed", never 401
  const aud = [answer.aud ?? []].flat();
  if (answer.active !== true || (aud.length && !aud.includes(env.OAUTH_RESOURCE_URI))) return send(res, 401, { error: "invalid_token" }, ', error="invalid_token"');
  const granted = new Set(answer.scope.split(" ").flatMap((scope) => [scope, implies.get(scope)]));
  if (!granted.has(required)) return send(res, 403, { error: "insufficient_scope", required }, `, error="insufficient_scope", scope="${required}"`);
  send(res, 200, { username: answer.username, scopes: answer.scope.split(" "), data: [] });
}).listen(Number(env.PORT ?? 8002), "127.0.0.1");
