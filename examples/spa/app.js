// A single-page app signing in with the authorization code flow and PKCE (RFC 7636, OAuth 2.0 for
// Browser-Based Apps), then calling GET /v2/me. Configure the three constants, or pass them in the
// page's query: ?issuer=…&client_id=… (the redirect URI is this page's own address).
const params = new URLSearchParams(location.search);
const ISSUER = params.get("issuer") || sessionStorage.getItem("issuer") || "http://localhost:8000";
const CLIENT_ID = params.get("client_id") || sessionStorage.getItem("client_id");
const REDIRECT_URI = location.origin + location.pathname;
const SCOPE = "PROFILE_READ";

const status = (text) => { document.getElementById("status").textContent = text; };
const base64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const random = (n) => base64url(crypto.getRandomValues(new Uint8Array(n)));

async function signIn() {
  // The verifier and state must survive the redirect to the authorization server and back, so
  // they go to sessionStorage (this tab only, gone when it closes), never to localStorage or a URL.
  const verifier = random(32);
  const state = random(16);
  sessionStorage.setItem("pkce_verifier", verifier);
  sessionStorage.setItem("oauth_state", state);
  sessionStorage.setItem("issuer", ISSUER);
  sessionStorage.setItem("client_id", CLIENT_ID);
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const url = new URL(ISSUER + "/auth/oauth2/authorize");
  url.search = new URLSearchParams({
    response_type: "code", client_id: CLIENT_ID, redirect_uri: REDIRECT_URI, scope: SCOPE,
    state, code_challenge: challenge, code_challenge_method: "S256",
  });
  location.assign(url);
}

async function callback() {
  const state = sessionStorage.getItem("oauth_state");
  const verifier = sessionStorage.getItem("pkce_verifier");
  sessionStorage.removeItem("oauth_state");
  sessionStorage.removeItem("pkce_verifier");
  // RFC 9207: the answer must come from our authorization server; the state from our request.
  if (!state || params.get("state") !== state) return status("Refused: the state does not match.");
  if (params.get("iss") !== ISSUER) return status("Refused: the answer comes from another issuer.");
  if (params.get("error")) return status("Not signed in: " + params.get("error"));
  history.replaceState(null, "", REDIRECT_URI);  // the code leaves the address bar at once
  const tokenResponse = await fetch(ISSUER + "/v2/auth/oauth2/token", {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code", code: params.get("code"), redirect_uri: REDIRECT_URI,
      client_id: CLIENT_ID, code_verifier: verifier,
    }),
  });
  const tokens = await tokenResponse.json();
  if (!tokenResponse.ok) return status("Token request refused: " + tokens.error);
  // Keep tokens in memory only: this example needs them for one call.
  const me = await fetch(ISSUER + "/v2/me", { headers: { Authorization: "Bearer " + tokens.access_token } });
  const profile = await me.json();
  if (!me.ok) return status("GET /v2/me refused: " + me.status);
  document.getElementById("username").textContent = profile.data.username;
  status("Signed in.");
}

document.getElementById("sign-in").addEventListener("click", signIn);
if (params.has("code") || params.has("error")) callback();
