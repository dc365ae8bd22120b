// The API key and the calls to the gateway. The key lives in sessionStorage only (this tab,
// gone when it closes): never in a URL, a cookie or localStorage; it is sent only as the
// Authorization header of same-origin /v1 calls.

import { apiErrorText } from "./citations.js";

const KEY_SLOT = "attesta.apiKey";

export function getKey() {
  try {
    return window.sessionStorage.getItem(KEY_SLOT);
  } catch {
    return null;
  }
}

export function setKey(key) {
  window.sessionStorage.setItem(KEY_SLOT, key);
}

export function clearKey() {
  window.sessionStorage.removeItem(KEY_SLOT);
}

let onAuthFailure = () => {};

/** Who handles a 401 (the router: back to sign-in with the reason). */
export function setAuthFailureHandler(handler) {
  onAuthFailure = handler;
}

/**
 * Calls the gateway. `body` is sent as JSON, `rawBody` as it is with `contentType`. `auth`: send the key (the default for /v1 routes other than public and
 * chat). Returns {ok, status, data, text, headers}; a 401 on an authenticated call also
 * clears the key and hands the reason to the sign-in page.
 */
export async function callApi(method, path, { body, rawBody, contentType, auth = true, idempotencyKey, accept = "application/json", raw = false } = {}) {
  if (!path.startsWith("/v1/")) throw new Error(`not an API path: ${path}`);
  const headers = { Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (rawBody !== undefined) headers["Content-Type"] = contentType; // a file sent as it is (CSV/JSONL)
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  const key = auth ? getKey() : null;
  if (auth && !key) {
    onAuthFailure("Sign in with an API key to see this page.");
    return { ok: false, status: 401, data: null, text: "not signed in" };
  }
  if (key) headers.Authorization = `Bearer ${key}`;
  let resp;
  try {
    resp = await fetch(path, {
      method, headers, body: rawBody !== undefined ? rawBody : body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit", cache: "no-store", referrerPolicy: "no-referrer",
    });
  } catch (err) {
    return { ok: false, status: 0, data: null, text: `The gateway could not be reached (${err.message}).` };
  }
  if (raw && resp.ok) return { ok: true, status: resp.status, response: resp };
  let data = null;
  try {
    data = await resp.json();
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const text = apiErrorText(resp.status, data);
    // 401: the key is missing, unknown or revoked: sign in again. A 403 is the key's role
    // (a viewer's write, a non-admin on /keys): the key stays, the page shows the reason.
    if (auth && resp.status === 401) {
      clearKey();
      onAuthFailure(`The gateway refused the key: ${text}`);
    }
    return { ok: false, status: resp.status, data, text };
  }
  return { ok: true, status: resp.status, data, headers: resp.headers };
}
