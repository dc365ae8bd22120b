// Pure helpers of the SPA: no DOM, no network, importable by node (`node --test frontend/`).
// Everything the page shows from API data goes through these functions first.

// One URL rule for the whole product: the answer service's `source_url_from`
// (services/answer/.../domain/citations.py) and this function accept and refuse the same
// inputs and return the same href; both test suites read tests/data/url_safety_cases.json.
// Browsers strip C0 controls and spaces from both ends of a URL before parsing (WHATWG); so do
// we. Anything of that kind left INSIDE (a tab a browser would drop, so "java\tscript:" IS
// "javascript:" to it; a bidi override; a space) or a backslash (read as "/") refuses the URL.
const C0_OR_SPACE_AT_ENDS = /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g;
const ASCII_REFUSED = /[\u0000-\u0020\u007f\\]/;
const CONTROL_OR_SEPARATOR = /[\p{C}\p{Z}]/u;
const HTTP_SCHEME_WITH_AUTHORITY = /^(https?):\/\//i;
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_URL_CHARS = 2048;

function validHost(host, bracketed, UrlClass) {
  if (bracketed) {
    if (!/^[0-9a-f:.]+$/i.test(host) || !host.includes(":")) return false;
    try {
      return new UrlClass(`http://[${host}]/`).hostname !== ""; // the parser validates IPv6
    } catch {
      return false;
    }
  }
  return host.length <= 253 && host.split(".").every((label) => HOST_LABEL.test(label));
}

/**
 * The href to render for a citation's `source_url`, or null when it must be shown as text.
 *
 * An absolute http:/https: URL followed by "//" and a valid host (DNS labels, IPv4, or a
 * bracketed IPv6; no percent-escapes, no user-info such as "https://bank.example@evil.example",
 * a port in 0..65535). Refused: non-strings, every other scheme, relative and
 * protocol-relative URLs, controls/spaces/backslashes inside, non-ASCII hosts (IDN look-alikes)
 * and over-long URLs. Returned with scheme and host lower-cased, the rest unchanged.
 */
export function safeHttpUrl(raw, UrlClass = globalThis.URL) {
  if (typeof raw !== "string" || raw.length > MAX_URL_CHARS + 64) return null;
  const url = raw.replace(C0_OR_SPACE_AT_ENDS, "");
  if (!url || url.length > MAX_URL_CHARS || ASCII_REFUSED.test(url)) return null;
  if (CONTROL_OR_SEPARATOR.test(url)) return null;
  const scheme = HTTP_SCHEME_WITH_AUTHORITY.exec(url);
  if (!scheme) return null;
  const afterScheme = url.slice(scheme[0].length);
  const end = afterScheme.search(/[/?#]/);
  const netloc = end < 0 ? afterScheme : afterScheme.slice(0, end);
  const rest = end < 0 ? "" : afterScheme.slice(end);
  if (netloc.includes("@")) return null;
  const bracketed = netloc.startsWith("[");
  let host;
  let port = "";
  if (bracketed) {
    const close = netloc.indexOf("]");
    if (close < 0) return null;
    host = netloc.slice(1, close);
    const tail = netloc.slice(close + 1);
    if (tail && !tail.startsWith(":")) return null;
    port = tail.slice(1);
  } else {
    const colon = netloc.indexOf(":");
    host = colon < 0 ? netloc : netloc.slice(0, colon);
    port = colon < 0 ? "" : netloc.slice(colon + 1);
  }
  if (port && (!/^\d+$/.test(port) || Number(port) > 65535)) return null;
  host = host.toLowerCase();
  if (!host || !validHost(host, bracketed, UrlClass)) return null;
  const hostOut = bracketed ? `[${host}]` : host;
  return `${scheme[1].toLowerCase()}://${hostOut}${port ? `:${Number(port)}` : ""}${rest}`;
}

/**
 * The text of a citation's score chip, or null for no chip.
 * `retrieved_score` is present only on the reranked ("full") path (ADR-0024 (B)); absent, null
 * or not a finite number in 0..100 means NO chip (never a made-up 0).
 */
export function scoreChipText(citation) {
  if (citation === null || typeof citation !== "object") return null;
  if (!Object.prototype.hasOwnProperty.call(citation, "retrieved_score")) return null;
  const score = citation.retrieved_score;
  if (typeof score !== "number" || !Number.isFinite(score) || score < 0 || score > 100) {
    return null;
  }
  return String(Math.round(score));
}

/** A licence to show, or null (only a non-empty string, trimmed, at most 200 chars). */
export function licenceText(citation) {
  const value = citation && citation.source_license;
  if (typeof value !== "string") return null;
  const trimmed = value.trim();
  return trimmed ? trimmed.slice(0, 200) : null;
}

const HYBRID_PATH_LABELS = {
  full: "Retrieval: hybrid + reranker (full)",
  rrf_only: "Retrieval: hybrid, no reranker (rrf_only)",
  dense_only: "Retrieval: dense only (dense_only)",
};

/** The label of the retrieval path that produced the context. */
export function hybridPathLabel(path) {
  if (path === null || path === undefined) return "Retrieval: none ran";
  if (typeof path === "string" && Object.prototype.hasOwnProperty.call(HYBRID_PATH_LABELS, path)) {
    return HYBRID_PATH_LABELS[path];
  }
  return `Retrieval: unknown path (${String(path).slice(0, 40)})`;
}

/**
 * What to say about an answer's status, or null when it is a normal answer.
 * `error` is the server's reason for a failed answer (shown as text).
 */
export function statusNotice(status, error) {
  if (status === undefined || status === null || status === "answered") return null;
  if (status === "no_context") {
    return "No answer: the knowledge base has nothing on this question.";
  }
  if (status === "failed") {
    const reason = typeof error === "string" && error.trim() ? `: ${error.trim()}` : ".";
    return `The answer failed${reason}`;
  }
  return `Unexpected answer status: ${String(status).slice(0, 40)}`;
}

/** Citations as the numbered items the page shows: [{number, cardId, span, href, urlText,
 * licence, score}]. Items without a card id are dropped (the contract requires one). */
export function citationItems(citations) {
  if (!Array.isArray(citations)) return [];
  const items = [];
  for (const c of citations) {
    if (!c || typeof c !== "object" || typeof c.card_id !== "string" || !c.card_id) continue;
    const rawUrl = typeof c.source_url === "string" ? c.source_url : null;
    items.push({
      number: items.length + 1,
      cardId: c.card_id,
      span: typeof c.span === "string" ? c.span : "",
      href: safeHttpUrl(rawUrl),
      urlText: rawUrl, // shown as plain text when it is not a safe link
      licence: licenceText(c),
      score: scoreChipText(c),
      title: typeof c.card_title === "string" && c.card_title.trim() ? c.card_title.trim() : null,
    });
  }
  return items;
}

// Lower-case, whitespace runs as one space; map[i] = index in the original of normalised char i.
function normalisedWithMap(text) {
  let out = "";
  const map = [];
  let space = false;
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i];
    if (/\s/.test(ch)) {
      space = out.length > 0;
      continue;
    }
    if (space) {
      out += " ";
      map.push(i);
      space = false;
    }
    out += ch.toLowerCase();
    map.push(i);
  }
  return { out, map };
}

/**
 * Where each citation's marker goes: right after the sentence of the answer that contains its
 * quoted span (compared lower-cased with whitespace collapsed, a final full stop ignored).
 * Returns {segments: [{text} | {numbers}], unplaced: [numbers]}: the answer's text cut at the
 * marker positions (in order; several markers at one place share a segment), and the citations
 * whose span is not in the answer (they are shown after it).
 */
export function placeMarkers(answer, items) {
  const text = typeof answer === "string" ? answer : "";
  const { out, map } = normalisedWithMap(text);
  const at = new Map(); // original index after the sentence -> numbers
  const unplaced = [];
  for (const item of items) {
    const span = normalisedWithMap(item.span || "").out.replace(/[.\s]+$/, "");
    const found = span.length >= 3 ? out.indexOf(span) : -1;
    if (found < 0) {
      unplaced.push(item.number);
      continue;
    }
    let end = map[found + span.length - 1] + 1;
    const rest = text.slice(end).search(/[.!?](?=\s|$)/);
    const nextBreak = text.slice(end).search(/\n/);
    if (rest >= 0 && (nextBreak < 0 || rest < nextBreak)) end += rest + 1;
    else end = nextBreak >= 0 ? end + nextBreak : text.length; // a sentence without a final stop
    at.set(end, [...(at.get(end) || []), item.number]);
  }
  const segments = [];
  let from = 0;
  for (const end of [...at.keys()].sort((a, b) => a - b)) {
    if (end > from) segments.push({ text: text.slice(from, end) });
    segments.push({ numbers: at.get(end) });
    from = end;
  }
  if (from < text.length) segments.push({ text: text.slice(from) });
  return { segments, unplaced };
}

/** The error shape of the API (`{"error": {"code", "reason"}}`) as one line of text. */
export function apiErrorText(httpStatus, body) {
  const error = body && typeof body === "object" ? body.error : null;
  if (error && typeof error === "object") {
    const code = typeof error.code === "string" ? error.code : "error";
    const reason = typeof error.reason === "string" ? error.reason : "";
    return `HTTP ${httpStatus} ${code}${reason ? `: ${reason}` : ""}`;
  }
  return `HTTP ${httpStatus}`;
}

// -- /verify -------------------------------------------------------------------------------

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/**
 * What the verify form holds: a bare 64-hex SHA-256 (surrounding whitespace ignored) is a hash
 * to look up; anything else is text whose exact UTF-8 bytes are hashed and checked.
 */
export function parseVerifyInput(input) {
  const text = typeof input === "string" ? input : "";
  const trimmed = text.trim();
  if (SHA256_HEX.test(trimmed)) return { kind: "hash", sha256: trimmed.toLowerCase() };
  if (text.length === 0) return { kind: "empty" };
  return { kind: "text", content: text };
}

/** Lower-case hex of the bytes of an ArrayBuffer or typed array. */
export function hexOf(buffer) {
  const bytes = buffer instanceof Uint8Array ? buffer : new Uint8Array(buffer);
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** SHA-256 of the exact UTF-8 bytes of `text` as lower-case hex. `subtle` is Web Crypto's
 * SubtleCrypto; it is missing on plain http (not a secure context): then this throws. */
export async function sha256HexOfText(text, subtle = globalThis.crypto && globalThis.crypto.subtle) {
  if (!subtle || typeof subtle.digest !== "function") {
    throw new Error("Web Crypto is unavailable here (it needs https or localhost)");
  }
  const bytes = new TextEncoder().encode(text);
  return hexOf(await subtle.digest("SHA-256", bytes));
}

/** The number of bytes, readable ("1,234 bytes (1.2 KiB)"). */
export function formatBytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return "unknown";
  const exact = `${Math.trunc(n).toLocaleString("en-US")} byte${n === 1 ? "" : "s"}`;
  if (n < 1024) return exact;
  const units = ["KiB", "MiB", "GiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${exact} (${value.toFixed(1)} ${units[unit]})`;
}

/** The rows shown for a public evidence record (`EvidenceView`): [[label, value], ...]. */
export function evidenceRows(view) {
  if (!view || typeof view !== "object") return [];
  const text = (v) => (v === undefined || v === null ? "unknown" : String(v));
  const rows = [
    ["SHA-256", text(view.sha256)],
    ["Media type", text(view.media_type)],
    ["Size", formatBytes(view.size_bytes)],
    ["First recorded", text(view.first_recorded_at)],
  ];
  const inclusion = view.inclusion;
  if (inclusion && typeof inclusion === "object") {
    rows.push(["Leaf index", text(inclusion.leaf_index)]);
    rows.push(["Tree size", text(inclusion.tree_size)]);
  } else {
    rows.push(["Inclusion proof", "not yet signed into a tree head (retry in a second)"]);
  }
  return rows;
}

/** The sentence for a byte-for-byte check result (`EvidenceCheckResult`). */
export function checkVerdict(result) {
  if (!result || typeof result !== "object") return "No check result.";
  if (result.match === true) {
    return "Match: these exact bytes are the recorded evidence.";
  }
  return "No match: these bytes differ from the recorded evidence.";
}

/**
 * What a displayed score means, in words from the calibration table (frontend/calibration.json,
 * a checked copy of docs/retrieval-quality.md's dev-split table), or a plain fallback.
 */
export function scoreMeaning(scoreText, calibration) {
  const score = Number(scoreText);
  const rows = calibration && Array.isArray(calibration.rows) ? calibration.rows : [];
  const row = rows.find((r) => score >= r.low && score <= r.high);
  if (scoreText === null || scoreText === undefined || !Number.isFinite(score) || !row) {
    return "Reranker relevance, 0-100 (what it means in practice: docs/retrieval-quality.md).";
  }
  const pct = (v) => `${Math.round(v * 100)}%`;
  return `Reranker score ${score} of 100. In our tests (dev split), of the ${row.pairs.toLocaleString("en-US")} candidates shown with a score of ${row.low}–${row.high}, ${pct(row.share_relevant)} were relevant to the question and ${pct(row.share_answers)} answered it.`;
}
